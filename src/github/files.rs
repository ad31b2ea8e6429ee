//! The files a step writes for the runner: `$GITHUB_OUTPUT` (step outputs) and
//! `$GITHUB_STEP_SUMMARY` (the job summary).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::Path;

/// GitHub's limit on one step's job summary, in bytes: larger summaries are dropped whole.
pub const STEP_SUMMARY_LIMIT: usize = 1024 * 1024;

/// Appends `outputs` to the `$GITHUB_OUTPUT` file at `path`, each in the multi-line form
/// `name<<DELIMITER` … `DELIMITER`, with a random delimiter that occurs nowhere in the value,
/// so no value (a path, a future multi-line message) can end its block early or inject
/// another output.
pub fn write_outputs(path: &Path, outputs: &[(&str, String)]) -> std::io::Result<()> {
    let mut text = String::new();
    for (name, value) in outputs {
        let delimiter = delimiter_for(value);
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    append(path, &text)
}

/// A delimiter of 32 random hex digits that `value` does not contain.
fn delimiter_for(value: &str) -> String {
    loop {
        let mut d = String::from("ghadelimiter_");
        for _ in 0..2 {
            // Each RandomState is seeded afresh from the OS's randomness.
            let mut h = RandomState::new().build_hasher();
            h.write_usize(d.len());
            d.push_str(&format!("{:016x}", h.finish()));
        }
        if !value.contains(&d) {
            return d;
        }
    }
}

/// Appends `text` to the job summary at `path`; the caller keeps it within
/// [`summary_budget`].
pub fn append_summary(path: &Path, text: &str) -> std::io::Result<()> {
    append(path, text)
}

/// Bytes left for this step's summary: the limit less what the file already holds (a
/// composite action's earlier writes), less a margin for the separating newline.
pub fn summary_budget(path: &Path) -> usize {
    let used = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    STEP_SUMMARY_LIMIT.saturating_sub(used).saturating_sub(2)
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()
}

/// Parses a `$GITHUB_OUTPUT` file as the runner does (`name=value` lines and
/// `name<<DELIMITER` blocks); later values win. For tests and for checking what was written.
pub fn parse_outputs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let (name, value) = if let Some((name, delimiter)) = line.split_once("<<") {
            let mut value = Vec::new();
            loop {
                match lines.next() {
                    Some(l) if l == delimiter => break,
                    Some(l) => value.push(l),
                    None => return Err(format!("output {name}: delimiter {delimiter} not found")),
                }
            }
            (name, value.join("\n"))
        } else if let Some((name, value)) = line.split_once('=') {
            (name, value.to_string())
        } else {
            return Err(format!("invalid output line {line:?}"));
        };
        out.retain(|(n, _)| n != name);
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// Escapes a workflow command's message (`%`, CR, LF), as the runner expects.
pub fn escape_command_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_round_trip_with_unique_delimiters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "earlier=1\n").unwrap();
        let tricky = "line one\nEOF\nghadelimiter_\nx=y".to_string();
        write_outputs(
            &path,
            &[
                ("has-changes", "true".into()),
                ("plan-json", tricky.clone()),
            ],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = parse_outputs(&text).unwrap();
        assert_eq!(
            parsed,
            [
                ("earlier".to_string(), "1".to_string()),
                ("has-changes".to_string(), "true".to_string()),
                ("plan-json".to_string(), tricky),
            ]
        );
        let delimiters: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once("<<").map(|(_, d)| d))
            .collect();
        assert_eq!(delimiters.len(), 2);
        assert_ne!(
            delimiters[0], delimiters[1],
            "each value gets its own delimiter"
        );
    }

    #[test]
    fn a_delimiter_never_occurs_in_its_value() {
        for _ in 0..100 {
            let d = delimiter_for("abc");
            assert!(d.starts_with("ghadelimiter_") && d.len() == 13 + 32, "{d}");
        }
    }

    #[test]
    fn summary_budget_counts_what_is_already_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary");
        assert_eq!(summary_budget(&path), STEP_SUMMARY_LIMIT - 2);
        append_summary(&path, &"x".repeat(1000)).unwrap();
        assert_eq!(summary_budget(&path), STEP_SUMMARY_LIMIT - 1002);
    }

    #[test]
    fn command_data_is_escaped() {
        assert_eq!(escape_command_data("50%\r\nnext"), "50%25%0D%0Anext");
    }
}
