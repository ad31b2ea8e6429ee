//! Syntax checks of apimachinery's `util/validation` and `api/validate/content`: names, label
//! keys and values, port names, environment variable names, IP addresses. Each returns
//! upstream's messages (empty when valid). Hand-written matchers stand in for upstream's
//! regular expressions, so nothing is compiled at run time.
//!
//! The rest of daemonsync asks its yes-or-no questions about names here too
//! ([`is_dns1123_subdomain`], [`is_label_key`], [`is_label_value`], [`is_rfc1123_name`]): one
//! reading of RFC 1123 names and label keys for the planner, the command line and the
//! simulated API server.

/// `validation.InclusiveRangeError`.
pub(super) fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `RegexError`: `msg (e.g. 'a',  or 'b', regex used for validation is 're')`.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(re);
    out.push_str("')");
    out
}

/// `util/validation.MaxLenError` (counts characters in its wording).
fn max_len_chars(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `content.MaxLenError` (counts bytes in its wording).
fn max_len_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_UNDERSCORE_FMT: &str =
    "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_UNDERSCORE_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, optionally with `_` inside and one leading `_`.
fn is_dns_label_chars(s: &[u8], underscore: bool) -> bool {
    let s = if underscore {
        s.strip_prefix(b"_").unwrap_or(s)
    } else {
        s
    };
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (s.first(), s.last()) {
        (Some(first), Some(last)) => {
            edge(first)
                && edge(last)
                && s.iter()
                    .all(|c| edge(c) || *c == b'-' || (underscore && *c == b'_'))
        }
        _ => false,
    }
}

fn is_subdomain_chars(s: &str, underscore: bool) -> bool {
    s.split('.')
        .all(|part| is_dns_label_chars(part.as_bytes(), underscore))
}

/// `IsDNS1123Label` (util flavour).
pub(super) fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_chars(63));
    }
    if !is_dns_label_chars(s.as_bytes(), false) {
        if is_subdomain_chars(s, false) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// How strictly the parts between a name's dots are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dots {
    /// Each part is a DNS-1123 label, alphanumeric at both ends: upstream's
    /// `IsDNS1123Subdomain`.
    Labels,
    /// Only the whole name begins and ends alphanumeric: `a..b` and `a-.b` pass. The check the
    /// command line and the simulated API server make of object names.
    Ends,
    /// Each part is non-empty, its ends unchecked: `-.a` passes, `a..b` does not. The check of
    /// the prefix of a `daemonsync.io/waves-by` label key.
    NonEmpty,
}

/// A lowercase RFC 1123 name: `[a-z0-9]`, `-` and `.`, at most `max` bytes, its dots read as
/// `dots` says (`Dots::Labels` and 253 is upstream's DNS-1123 subdomain).
pub fn is_rfc1123_name(s: &str, max: usize, dots: Dots) -> bool {
    let chars = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    s.len() <= max
        && match dots {
            Dots::Labels => is_subdomain_chars(s, false),
            Dots::Ends => {
                let b = s.as_bytes();
                matches!((b.first(), b.last()),
                    (Some(first), Some(last))
                        if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric())
                    && chars(s)
            }
            Dots::NonEmpty => s.split('.').all(|part| !part.is_empty() && chars(part)),
        }
}

/// Whether `s` is a DNS-1123 subdomain ([`dns1123_subdomain`] finds nothing to say).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    is_rfc1123_name(s, 253, Dots::Labels)
}

/// A label key, `[prefix/]name`: the name at most 63 bytes of alphanumerics, `-`, `_` and `.`,
/// alphanumeric at both ends; the prefix a name of at most 253 bytes read as `prefix` says
/// (`Dots::Labels` is upstream's `IsQualifiedName`: [`qualified_name`] finds nothing to say).
pub fn is_label_key(key: &str, prefix: Dots) -> bool {
    let name_ok = |name: &str| name.len() <= 63 && is_label_key_name(name.as_bytes());
    match key.split_once('/') {
        None => name_ok(key),
        Some((p, name)) => is_rfc1123_name(p, 253, prefix) && name_ok(name),
    }
}

/// Whether `s` is a label value ([`label_value`] finds nothing to say).
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || (s.len() <= 63 && is_label_key_name(s.as_bytes()))
}

/// `IsDNS1123Subdomain` (util flavour; also `NameIsDNSSubdomain`).
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    subdomain(s, max_len_chars)
}

fn subdomain(s: &str, max_len: fn(usize) -> String) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !is_subdomain_chars(s, false) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1123SubdomainWithUnderscore`.
pub(super) fn dns1123_subdomain_with_underscore(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_chars(253));
    }
    if !is_subdomain_chars(s, true) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_UNDERSCORE_MSG,
            DNS1123_SUBDOMAIN_UNDERSCORE_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_label_key_name(s: &[u8]) -> bool {
    match (s.first(), s.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && s.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsQualifiedName` / `content.IsLabelKey`: label keys, annotation keys, resource names,
/// taint keys.
pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in subdomain(prefix, max_len_bytes) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_bytes(63)));
    }
    if !is_label_key_name(name.as_bytes()) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue` / `content.IsLabelValue`.
pub(super) fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_bytes(63));
    }
    if !s.is_empty() && !is_label_key_name(s.as_bytes()) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsValidPortName` (IANA_SVC_NAME).
pub(super) fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len_chars(15));
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// `IsValidPortNum`.
pub(super) fn port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `IsValidUserID` / `IsValidGroupID`: 0 to 2^31-1.
pub(super) fn unix_id(id: i64) -> Vec<String> {
    if (0..=i64::from(i32::MAX)).contains(&id) {
        Vec::new()
    } else {
        vec![inclusive_range_error(0, i64::from(i32::MAX))]
    }
}

/// `IsRelaxedEnvVarName`: printable ASCII other than `=` (the
/// `RelaxedEnvironmentVariableValidation` gate is GA since v1.34).
pub(super) fn relaxed_env_var_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if s.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_string(),
        );
    }
    errs
}

/// `IsEnvVarName`: the environment variable names of the API servers before
/// `RelaxedEnvironmentVariableValidation` (v1.32).
pub(super) fn env_var_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut chars = s.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_'))
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if !valid {
        errs.push(regex_error(
            "a valid environment variable name must consist of alphabetic characters, digits, \
             '_', '-', or '.', and must not start with a digit",
            "[-._a-zA-Z][-._a-zA-Z0-9]*",
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    if let Some(msg) = ch_dir_prefix(s) {
        errs.push(msg.to_string());
    }
    errs
}

/// `hasChDirPrefix`.
fn ch_dir_prefix(s: &str) -> Option<&'static str> {
    match s {
        "." => Some("must not be '.'"),
        ".." => Some("must not be '..'"),
        s if s.starts_with("..") => Some("must not start with '..'"),
        _ => None,
    }
}

/// `IsConfigMapKey` (ConfigMap and Secret keys).
pub(super) fn config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_chars(253));
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(ch_dir_prefix(s).map(String::from));
    errs
}

/// `IsHTTPHeaderName`.
pub(super) fn http_header_name(s: &str) -> Vec<String> {
    if !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid HTTP header must consist of alphanumeric characters or '-'",
            "[-A-Za-z0-9]+",
            &["X-Header-Name"],
        )]
    }
}

/// Whether Go's `netutils.ParseIPSloppy` accepts `s`: an IPv4 address (leading zeros allowed,
/// read as decimal) or an IPv6 address.
pub(super) fn is_ip_sloppy(s: &str) -> bool {
    if s.contains(':') {
        // The standard parser is strict about IPv6 in the same way Go is, except that Go
        // allows leading zeros in an embedded dotted quad.
        if s.parse::<std::net::Ipv6Addr>().is_ok() {
            return true;
        }
        return match s.rfind(':') {
            Some(i) if s[i + 1..].contains('.') && is_ipv4_sloppy(&s[i + 1..]) => {
                let v4 = sloppy_v4_octets(&s[i + 1..]);
                v4.is_some_and(|o| {
                    format!("{}:{}.{}.{}.{}", &s[..i], o[0], o[1], o[2], o[3])
                        .parse::<std::net::Ipv6Addr>()
                        .is_ok()
                })
            }
            _ => false,
        };
    }
    is_ipv4_sloppy(s)
}

fn sloppy_v4_octets(s: &str) -> Option<[u16; 4]> {
    let mut out = [0u16; 4];
    let mut parts = s.split('.');
    for slot in &mut out {
        let p = parts.next()?;
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let v: u64 = p.parse().ok()?;
        if v > 255 {
            return None;
        }
        *slot = v as u16;
    }
    parts.next().is_none().then_some(out)
}

fn is_ipv4_sloppy(s: &str) -> bool {
    sloppy_v4_octets(s).is_some()
}

/// `IsValidIPForLegacyField` with the `StrictIPCIDRValidation` gate off (its default in
/// v1.35): the message of `parseIP`.
pub(super) fn ip_legacy(s: &str) -> Vec<String> {
    if is_ip_sloppy(s) {
        Vec::new()
    } else {
        vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_string()]
    }
}

/// One segment of a sysctl name: `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`.
fn is_sysctl_segment(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            edge(first) && edge(last) && b.iter().all(|c| edge(c) || matches!(c, b'-' | b'_'))
        }
        _ => false,
    }
}

/// The regular expression upstream quotes for sysctl names.
pub(super) const SYSCTL_RE: &str =
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

/// `IsValidSysctlName`: at most 253 characters, segments separated by `.` or `/`.
pub(super) fn is_valid_sysctl_name(s: &str) -> bool {
    s.len() <= 253 && s.split(['.', '/']).all(is_sysctl_segment)
}

/// `utilsysctl.NormalizeName`: a name whose first separator is `/` uses `/` for `.` and back.
pub(super) fn normalize_sysctl_name(s: &str) -> String {
    match s.find(['.', '/']) {
        Some(i) if s.as_bytes()[i] == b'/' => s
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_follow_upstream() {
        assert!(dns1123_label("my-name").is_empty());
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
        assert!(dns1123_label("Bad")[0].starts_with("a lowercase RFC 1123 label"));
        assert!(qualified_name("example.com/MyName").is_empty());
        assert_eq!(
            qualified_name("/x"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            qualified_name("x/").len(),
            2,
            "empty name: non-empty and regex"
        );
        assert!(qualified_name("a/b/c")[0].starts_with("a valid label key must consist"));
        assert!(label_value("").is_empty());
        assert_eq!(
            label_value(&"a".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
        assert!(port_name("http").is_empty());
        assert_eq!(port_name("80").len(), 1);
        assert!(dns1123_subdomain_with_underscore("_srv.example.com").is_empty());
    }

    #[test]
    fn label_key_and_value_validation() {
        assert!(is_label_key("kubernetes.io/os", Dots::Labels));
        assert!(is_label_key("a_b.c-d", Dots::Labels));
        assert!(!is_label_key("/os", Dots::Labels));
        assert!(!is_label_key("Example.com/os", Dots::Labels));
        assert!(!is_label_key("a/b/c", Dots::Labels));
        assert!(!is_label_key(&"x".repeat(64), Dots::Labels));
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_3-x"));
        assert!(!is_label_value("-5"));
        assert!(!is_label_value("a b"));
    }

    #[test]
    fn the_yes_or_no_checks_agree_with_upstream_s_messages() {
        let long = "a".repeat(64);
        let longer = format!("{}.com", "a".repeat(250));
        let names = [
            "",
            "a",
            "a.b",
            "a..b",
            "a-.b",
            "-a",
            "a-",
            "A",
            "a_b",
            "a/b",
            "a/b/c",
            "/a",
            "a/",
            "-.a/b",
            "example.com/MyName",
            "x.y/a.b",
            &long,
            &longer,
        ];
        for s in names {
            assert_eq!(
                is_dns1123_subdomain(s),
                dns1123_subdomain(s).is_empty(),
                "{s:?}"
            );
            assert_eq!(
                is_label_key(s, Dots::Labels),
                qualified_name(s).is_empty(),
                "{s:?}"
            );
            assert_eq!(is_label_value(s), label_value(s).is_empty(), "{s:?}");
        }
    }

    #[test]
    fn the_looser_readings_of_dots_are_what_their_callers_took() {
        for (s, labels, ends, non_empty) in [
            ("node-agent.v2", true, true, true),
            ("a..b", false, true, false),
            ("a-.b", false, true, true),
            ("-.a", false, false, true),
            ("-a", false, false, true),
            ("a.", false, false, false),
            ("", false, false, false),
            ("Agent", false, false, false),
        ] {
            assert_eq!(is_rfc1123_name(s, 253, Dots::Labels), labels, "{s:?}");
            assert_eq!(is_rfc1123_name(s, 253, Dots::Ends), ends, "{s:?}");
            assert_eq!(is_rfc1123_name(s, 253, Dots::NonEmpty), non_empty, "{s:?}");
        }
        assert!(!is_rfc1123_name(&"a".repeat(64), 63, Dots::Ends));
        assert!(is_label_key("-.a/zone", Dots::NonEmpty));
        assert!(!is_label_key("-.a/zone", Dots::Labels));
    }

    #[test]
    fn sloppy_ip_parsing_matches_go() {
        for ok in [
            "10.0.0.1",
            "010.0.0.1",
            "::1",
            "2001:db8::ffff",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_ip_sloppy(ok), "{ok}");
        }
        for bad in [
            "10.0.0",
            "256.0.0.1",
            "",
            "1.2.3.4.5",
            "fe80::1%eth0",
            "a.b.c.d",
        ] {
            assert!(!is_ip_sloppy(bad), "{bad}");
        }
    }

    #[test]
    fn sysctl_names() {
        assert!(is_valid_sysctl_name("net.ipv4.ip_forward"));
        assert!(is_valid_sysctl_name("net/ipv4/conf/eno2.100/rp_filter"));
        assert!(!is_valid_sysctl_name("net..a"));
        assert!(!is_valid_sysctl_name("Net.a"));
        assert_eq!(
            normalize_sysctl_name("net/ipv4/conf/eno2.100/rp_filter"),
            "net.ipv4.conf.eno2/100.rp_filter"
        );
    }
}
