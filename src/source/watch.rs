//! Watching local directories: one re-plan per burst of edits.
//!
//! notify-debouncer-full collects the events of a burst (an editor's save, a `git checkout`)
//! into one batch after a quiet period; [`next_burst`] additionally folds every batch already
//! waiting into one, so a slow re-plan never queues a backlog of re-plans.

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// The quiet period after the last event before a re-plan (300 ms).
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// Blocks until at least one item arrives, then drains every item already waiting.
/// Returns how many were folded together, or `None` when the sender is gone.
pub fn next_burst<T>(rx: &Receiver<T>) -> Option<usize> {
    rx.recv().ok()?;
    let mut n = 1;
    while rx.try_recv().is_ok() {
        n += 1;
    }
    Some(n)
}

/// Watches `paths` recursively and calls `on_change` once per burst of changes, until it
/// returns `false` or the watcher stops.
///
/// A watched directory that is replaced (moved away and another moved in, as deploy tools and
/// some editors do) keeps being watched: each path's parent is watched too (events there count
/// only when they concern the path itself), and every burst re-establishes the watch on each
/// path, which then follows the new directory.
pub fn watch_paths(
    paths: &[PathBuf],
    debounce: Duration,
    mut on_change: impl FnMut() -> bool,
) -> Result<(), notify::Error> {
    let roots: Vec<PathBuf> = paths
        .iter()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let (tx, rx) = channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(debounce, None, tx)?;
    for root in &roots {
        debouncer.watch(root, RecursiveMode::Recursive)?;
        if let Some(parent) = root.parent() {
            debouncer.watch(parent, RecursiveMode::NonRecursive)?;
        }
    }
    // Only batches with a real change (not mere reads) under a watched path count.
    let (relevant_tx, relevant_rx) = channel::<()>();
    let filter_roots = roots.clone();
    std::thread::spawn(move || {
        for batch in rx {
            let relevant = match batch {
                Ok(events) => events.iter().any(|e| {
                    !e.kind.is_access()
                        && e.paths
                            .iter()
                            .any(|p| filter_roots.iter().any(|r| p.starts_with(r)))
                }),
                Err(_) => true,
            };
            if relevant && relevant_tx.send(()).is_err() {
                break;
            }
        }
    });
    while next_burst(&relevant_rx).is_some() {
        for root in &roots {
            // Follows a replaced directory; a path that is gone for now is picked up again
            // when it reappears (its parent's watch reports that).
            let _ = debouncer.unwatch(root);
            let _ = debouncer.watch(root, RecursiveMode::Recursive);
        }
        if !on_change() {
            break;
        }
    }
    debouncer.stop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_gives_one_replan() {
        let (tx, rx) = channel();
        for i in 0..50 {
            tx.send(i).unwrap();
        }
        let mut replans = Vec::new();
        replans.push(next_burst(&rx).unwrap());
        tx.send(99).unwrap();
        replans.push(next_burst(&rx).unwrap());
        drop(tx);
        assert_eq!(replans, vec![50, 1]);
        assert_eq!(next_burst(&rx), None);
    }

    /// Waits (bounded) for the next re-plan.
    fn next_replan(rx: &std::sync::mpsc::Receiver<()>) -> bool {
        rx.recv_timeout(Duration::from_secs(10)).is_ok()
    }

    #[test]
    fn watch_goes_on_when_its_directory_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("deploy");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("a.yaml"), "a: 1\n").unwrap();
        let (tx, rx) = channel::<()>();
        let watched = vec![dir.clone()];
        std::thread::spawn(move || {
            let _ = watch_paths(&watched, Duration::from_millis(50), || tx.send(()).is_ok());
        });
        // The watch is set up asynchronously: poke until the first re-plan arrives.
        let mut seen = false;
        for i in 0..50 {
            std::fs::write(dir.join("a.yaml"), format!("a: {i}\n")).unwrap();
            if rx.recv_timeout(Duration::from_millis(200)).is_ok() {
                seen = true;
                break;
            }
        }
        assert!(seen, "no re-plan for an edit");
        while rx.recv_timeout(Duration::from_millis(300)).is_ok() {}
        // Replace the directory the way deploy tools do.
        let new = t.path().join("deploy.new");
        std::fs::create_dir(&new).unwrap();
        std::fs::write(new.join("a.yaml"), "a: new\n").unwrap();
        std::fs::rename(&dir, t.path().join("deploy.old")).unwrap();
        std::fs::rename(&new, &dir).unwrap();
        assert!(next_replan(&rx), "no re-plan for the replacement");
        while rx.recv_timeout(Duration::from_millis(300)).is_ok() {}
        // Edits inside the new directory are still seen.
        std::fs::write(dir.join("a.yaml"), "a: edited\n").unwrap();
        assert!(
            next_replan(&rx),
            "the watch stopped after the directory was replaced"
        );
    }
}
