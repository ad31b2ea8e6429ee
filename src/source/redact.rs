//! Removing credentials from URLs and from any text that may contain one.

/// Replaces the userinfo of every `scheme://user:secret@host` in `text` with `***`, and every
/// occurrence of the token in `DAEMONSYNC_GIT_TOKEN` (if set) with `***`.
///
/// Used on every URL and every message that leaves the source module.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace.
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    match std::env::var("DAEMONSYNC_GIT_TOKEN") {
        Ok(token) if token.len() >= 4 => out.replace(&token, "***"),
        _ => out,
    }
}

/// [`redact`] for a single URL (or path).
pub fn redact_url(url: &str) -> String {
    redact(url)
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn strips_userinfo() {
        assert_eq!(
            redact("https://user:s3cret@example.com/x.git"),
            "https://***@example.com/x.git"
        );
        assert_eq!(redact("https://tok@h:8443"), "https://***@h:8443");
        assert_eq!(
            redact("failed to fetch http://a:b@h/x and https://c:d@i/y: refused"),
            "failed to fetch http://***@h/x and https://***@i/y: refused"
        );
    }

    #[test]
    fn leaves_plain_urls_and_paths() {
        for s in [
            "https://example.com/x.git",
            "git@github.com:o/r.git",
            "/tmp/repo",
            "file:///tmp/a@b/repo",
        ] {
            assert_eq!(redact(s), s);
        }
    }
}
