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
pub fn watch_paths(
    paths: &[PathBuf],
    debounce: Duration,
    mut on_change: impl FnMut() -> bool,
) -> Result<(), notify::Error> {
    let (tx, rx) = channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(debounce, None, tx)?;
    for p in paths {
        debouncer.watch(p, RecursiveMode::Recursive)?;
    }
    // Only batches with a real change (not mere reads) count.
    let (relevant_tx, relevant_rx) = channel::<()>();
    std::thread::spawn(move || {
        for batch in rx {
            let relevant = match batch {
                Ok(events) => events.iter().any(|e| !e.kind.is_access()),
                Err(_) => true,
            };
            if relevant && relevant_tx.send(()).is_err() {
                break;
            }
        }
    });
    while next_burst(&relevant_rx).is_some() {
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
}
