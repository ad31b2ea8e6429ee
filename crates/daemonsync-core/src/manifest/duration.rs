//! The one duration grammar. Command-line flags (`--timeout`, `--progress-deadline`,
//! `--interval`, `--lease-duration`, `--git-timeout`), the simulated cluster's file and its
//! fault specs, and the pauses of a rollout policy all read their durations here.
//!
//! A duration is jiff's friendly format (`250ms`, `30s`, `5m`, `1h30m`) or ISO 8601 (`PT5S`),
//! and never negative. Flags and files ignore surrounding whitespace ([`parse`]); an
//! annotation is read exactly as written and begins with a digit ([`parse_annotation`]), so
//! that what a DaemonSet in git says looks the same everywhere it is shown.

use jiff::SignedDuration;

/// Why a duration was refused.
enum Refused {
    /// Not a duration at all.
    Syntax(jiff::Error),
    /// Below zero.
    Negative,
}

/// The grammar itself: jiff's friendly format or ISO 8601, not negative.
fn read(s: &str) -> Result<SignedDuration, Refused> {
    let d: SignedDuration = s.parse().map_err(Refused::Syntax)?;
    if d.is_negative() {
        return Err(Refused::Negative);
    }
    Ok(d)
}

/// A duration as flags and files take it, `5s`, `2m`, `1h30m`, `250ms`, surrounding whitespace
/// ignored; the error says what was expected.
pub fn parse(s: &str) -> Result<SignedDuration, String> {
    read(s.trim()).map_err(|why| match why {
        Refused::Syntax(e) => {
            format!("invalid duration {s:?} (expected e.g. 5s, 1m30s, 250ms): {e}")
        }
        Refused::Negative => format!("duration {s:?} is negative"),
    })
}

/// A duration above zero, for a timer or a network timeout; `examples` (e.g. `"30s, 1m"`) end
/// the message of a zero one.
pub fn parse_positive(s: &str, examples: &str) -> Result<std::time::Duration, String> {
    let d = parse(s)?;
    match std::time::Duration::try_from(d) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!(
            "{s:?} is not a positive duration (e.g. {examples})"
        )),
    }
}

/// A duration as an annotation takes it: exactly as written and beginning with a digit (no
/// sign, no ISO 8601), e.g. `30s`, `5m`, `1h30m`. `None` when it is not one.
pub fn parse_annotation(s: &str) -> Option<SignedDuration> {
    if !s.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return None;
    }
    read(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_files_take_friendly_and_iso_durations_trimmed() {
        assert_eq!(parse("90s"), Ok(SignedDuration::from_secs(90)));
        assert_eq!(parse(" 1m30s "), Ok(SignedDuration::from_secs(90)));
        assert_eq!(parse("250ms"), Ok(SignedDuration::from_millis(250)));
        assert_eq!(parse("PT5S"), Ok(SignedDuration::from_secs(5)));
        assert_eq!(
            parse("-5m"),
            Err("duration \"-5m\" is negative".to_string())
        );
        assert!(
            parse("soon")
                .unwrap_err()
                .starts_with("invalid duration \"soon\" (expected e.g. 5s, 1m30s, 250ms): ")
        );
    }

    #[test]
    fn a_positive_duration_is_above_zero() {
        assert_eq!(
            parse_positive("2m", "30s, 1m"),
            Ok(std::time::Duration::from_secs(120))
        );
        assert_eq!(
            parse_positive("0s", "30s, 1m"),
            Err("\"0s\" is not a positive duration (e.g. 30s, 1m)".to_string())
        );
        assert!(parse_positive("-1s", "30s, 1m").is_err());
    }

    #[test]
    fn an_annotation_is_read_as_written_from_a_digit() {
        assert_eq!(
            parse_annotation("1h30m"),
            Some(SignedDuration::from_secs(5400))
        );
        assert_eq!(parse_annotation("30s"), Some(SignedDuration::from_secs(30)));
        for refused in ["", " 30s", "+30s", "-5m", "PT5S", "soon"] {
            assert_eq!(parse_annotation(refused), None, "{refused:?}");
        }
    }
}
