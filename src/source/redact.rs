//! Removing credentials from URLs and from any text that may contain one.
//!
//! Passwords are not always URL-encoded by the people who paste them: an AWS CodeCommit
//! password contains `/`, others contain `#`, `?`, `@` or a space. So the user-info of a URL
//! does not end at the first such character; it ends at the **last** `@` of the URL. Two
//! layers make sure nothing leaks:
//!
//! 1. every URL a source is built from has its user-info registered ([`register_url`]), and
//!    every registered secret is replaced wherever it appears, whatever a library did to the
//!    URL around it;
//! 2. every `scheme://…@host` and scp-style `user:password@host:path` in any text loses its
//!    user-info, registered or not.

use std::sync::{Mutex, PoisonError};

/// Secrets seen in URLs this process was given (user-info, as written and percent-decoded).
static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Shortest secret worth replacing everywhere (shorter ones would garble unrelated text; they
/// are still removed from URLs by the structural pass).
const MIN_SECRET_LEN: usize = 4;

/// Remembers the user-info of `url` (if it has one), its query values and its fragment, so
/// that [`redact`] removes them from every message, even one where a library printed them
/// without the rest of the URL.
pub fn register_url(url: &str) {
    let mut found: Vec<String> = Vec::new();
    if let Some(userinfo) = userinfo(url) {
        found.push(userinfo.to_string());
        if let Some((_, password)) = userinfo.split_once(':') {
            found.push(password.to_string());
        }
    }
    // After the user-info (which may itself hold '?' or '#'): query values and the fragment.
    let after_userinfo = match url.find("://") {
        Some(i) => url[i + 3..].rfind('@').map_or(url, |at| &url[i + 3 + at..]),
        None => url,
    };
    found.extend(
        query_secrets(after_userinfo)
            .into_iter()
            .map(str::to_string),
    );
    if found.is_empty() {
        return;
    }
    let decoded: Vec<String> = found.iter().filter_map(|s| percent_decode(s)).collect();
    found.extend(decoded);
    let mut secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    for s in found {
        if s.len() >= MIN_SECRET_LEN && !secrets.contains(&s) {
            secrets.push(s);
        }
    }
    // Longest first, so a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// The user-info of a URL (`scheme://USERINFO@host…` or scp-style `USERINFO@host:path` with a
/// password), ending at the last `@` of the URL.
fn userinfo(url: &str) -> Option<&str> {
    let rest = match url.find("://") {
        Some(i) => &url[i + 3..],
        None => url,
    };
    let at = rest.rfind('@')?;
    let info = &rest[..at];
    if url.contains("://") || info.contains(':') {
        Some(info)
    } else {
        None // scp-style `git@host:path`: a user name, not a secret
    }
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return None;
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(v as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Removes every credential from `text`: registered secrets, the user-info of every
/// `scheme://user:secret@host` (up to the last `@` before the end of the line), scp-style
/// `user:password@host:path`, and the token in `DAEMONSYNC_GIT_TOKEN` (if set).
///
/// Used on every URL and every message that leaves the source module.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    {
        let secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
        for s in secrets.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
    }
    if let Ok(token) = std::env::var("DAEMONSYNC_GIT_TOKEN")
        && token.len() >= MIN_SECRET_LEN
    {
        out = out.replace(&token, "***");
    }
    out.split_inclusive('\n').map(redact_line).collect()
}

/// The structural pass over one line.
fn redact_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(&redact_scp_words(head));
        // The user-info may hold '/', '?', '#', '@' or spaces: it ends at the last '@' before
        // the next URL (or the end of the line).
        let scope = tail.find("://").map_or(tail.len(), |j| {
            tail[..j]
                .rfind(|c: char| c.is_whitespace())
                .map_or(0, |k| k + 1)
        });
        match tail[..scope].rfind('@') {
            // `file:///path`: no authority, nothing to hide.
            Some(at) if !tail.starts_with('/') && !tail[..at].ends_with("***") => {
                out.push_str("***");
                rest = &tail[at..];
            }
            _ => rest = tail,
        }
        // Copy the host part so the loop does not look at it again.
        let end = rest
            .find(|c: char| c == '/' || c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..end]);
        rest = &rest[end..];
        // The path, with the values of its query and its fragment hidden: tokens travel there
        // too (`?access_token=…`).
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if !rest[..end].contains("://") {
            out.push_str(&redact_query(&rest[..end]));
            rest = &rest[end..];
        }
    }
    out.push_str(&redact_scp_words(rest));
    out
}

/// A URL's path onwards with every query value and the fragment replaced by `***`
/// (`/r.git?access_token=***&ref=***#***`); punctuation that ends a sentence around the URL
/// (`:`, `,`, `)`…) is kept.
fn redact_query(path: &str) -> String {
    let core = path.trim_end_matches([':', ',', ';', '.', ')', '"', '\'', '`']);
    let tail = &path[core.len()..];
    let (before, fragment) = match core.split_once('#') {
        Some((b, _)) => (b, true),
        None => (core, false),
    };
    let mut out = String::with_capacity(path.len());
    match before.split_once('?') {
        Some((p, query)) => {
            out.push_str(p);
            out.push('?');
            let params: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None if kv.is_empty() => String::new(),
                    None => "***".to_string(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(before),
    }
    if fragment {
        out.push_str("#***");
    }
    out.push_str(tail);
    out
}

/// The query values and the fragment of `url` (what [`redact_query`] hides), for
/// [`register_url`].
fn query_secrets(url: &str) -> Vec<&str> {
    let Some(i) = url.find(['?', '#']) else {
        return Vec::new();
    };
    let (query, fragment) = match url[i..].split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (&url[i..], None),
    };
    query
        .trim_start_matches('?')
        .split('&')
        .filter_map(|kv| kv.split_once('=').map_or(Some(kv), |(_, v)| Some(v)))
        .chain(fragment)
        .collect()
}

/// scp-style `user:password@host:path` words (no scheme): the part before the last `@` goes
/// when it holds a `:` (a password); `git@host:path` is left alone.
fn redact_scp_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_inclusive(char::is_whitespace) {
        let trimmed = word.trim_end();
        let redacted = match trimmed.rfind('@') {
            Some(at)
                if trimmed[..at].contains(':')
                    && trimmed[at + 1..].contains(':')
                    && !trimmed[..at].ends_with("***") =>
            {
                let start = trimmed[..at]
                    .rfind(['"', '\'', '(', '`', '='])
                    .map_or(0, |i| i + 1);
                Some(format!("{}***{}", &trimmed[..start], &word[at..]))
            }
            _ => None,
        };
        match redacted {
            Some(r) => out.push_str(&r),
            None => out.push_str(word),
        }
    }
    out
}

/// [`redact`] for a single URL (or path).
pub fn redact_url(url: &str) -> String {
    redact(url)
}

#[cfg(test)]
mod tests {
    use super::{redact, register_url};

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
    fn passwords_with_url_delimiters_are_removed_whole() {
        for (url, secret) in [
            ("https://u:pa#ss@h/r.git", "pa#ss"),
            ("https://u:pa?ss@h/r.git", "pa?ss"),
            (
                "https://u:AbC/dEf+gh@git-codecommit.us-east-1.amazonaws.com/v1/repos/r",
                "AbC/dEf+gh",
            ),
            ("https://u:p@ss@h/r.git", "p@ss"),
            ("https://u:pa ss@h/r.git", "pa ss"),
        ] {
            let out = redact(&format!("cannot fetch {url}: refused"));
            assert!(!out.contains(secret), "{url} -> {out}");
            assert!(out.contains("***@"), "{url} -> {out}");
            assert!(out.ends_with(": refused"), "{url} -> {out}");
        }
    }

    #[test]
    fn scp_style_passwords_are_removed() {
        let out = redact("repository user:hunter22@git.example.com:org/repo.git: not found");
        assert!(!out.contains("hunter22"), "{out}");
        assert!(out.contains("***@git.example.com:org/repo.git"), "{out}");
        // A user name alone is not a secret.
        assert_eq!(redact("git@github.com:o/r.git"), "git@github.com:o/r.git");
    }

    #[test]
    fn registered_secrets_are_removed_anywhere() {
        register_url("https://bot:Zq9/xx#yy@h.example/r.git");
        let out = redact("auth failed for bot with Zq9/xx#yy (and Zq9%2Fxx%23yy)");
        assert!(!out.contains("Zq9/xx#yy"), "{out}");
        register_url("https://bot:Zq9%2Fxx%23yy@h.example/r.git");
        let out = redact("auth failed: Zq9%2Fxx%23yy / Zq9/xx#yy");
        assert!(!out.contains("Zq9"), "{out}");
    }

    #[test]
    fn tokens_in_query_strings_and_fragments_are_removed() {
        assert_eq!(
            redact("cannot fetch https://h/r.git?access_token=qs-sekrit: refused"),
            "cannot fetch https://h/r.git?access_token=***: refused"
        );
        assert_eq!(
            redact("https://u:p@h/r.git?x=1&private_token=t0ken&flag#frag-sekrit"),
            "https://***@h/r.git?x=***&private_token=***&***#***"
        );
        // Registered values go wherever a library printed them.
        register_url("https://h.example/r.git?token=Qq77-registered");
        let out = redact("auth failed with Qq77-registered");
        assert!(!out.contains("Qq77"), "{out}");
    }

    #[test]
    fn leaves_plain_urls_and_paths() {
        for s in [
            "https://example.com/x.git",
            "git@github.com:o/r.git",
            "/tmp/repo",
            "https://example.com/x.git: ref main not found",
            "file:///tmp/a@b/repo",
        ] {
            assert_eq!(redact(s), s);
        }
    }
}
