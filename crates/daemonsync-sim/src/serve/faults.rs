//! `--faults`: API failures injected for tests of clients (`error-rate=0.05,latency=20ms,
//! watch-drop=5s,forbid=create:pods`).

use std::time::Duration;

/// Injected failures. The default injects nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Faults {
    /// Share of requests answered 500 or 429 (half each), from 0 to 1.
    pub error_rate: f64,
    /// Latency added to every request.
    pub latency: Duration,
    /// Every watch connection is closed after this long.
    pub watch_drop: Option<Duration>,
    /// Requests answered 403 Forbidden, as a cluster whose RBAC does not grant them.
    pub forbid: Vec<Forbid>,
    /// Requests a validating admission webhook denies (`deny=VERB:RESOURCE:MESSAGE`).
    pub deny: Vec<crate::api::admission::Deny>,
}

/// `forbid=VERB:RESOURCE[/SUBRESOURCE]`: requests with this RBAC verb (`*`: any) on this
/// resource (of any group) are refused with 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbid {
    /// The RBAC verb (`create`, `delete`, `patch`, …) or `*`.
    pub verb: String,
    /// The resource plural (`pods`).
    pub resource: String,
    /// The subresource (`status`), or none: the resource itself.
    pub subresource: Option<String>,
}

impl Forbid {
    /// True when a request with `verb` on `resource`/`subresource` is refused.
    pub fn matches(&self, verb: &str, resource: &str, subresource: Option<&str>) -> bool {
        (self.verb == "*" || self.verb == verb)
            && self.resource == resource
            && self.subresource.as_deref() == subresource
    }
}

/// RBAC verbs a `forbid` may name.
const VERBS: &[&str] = &[
    "*",
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// A `--faults` spec that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid --faults {spec:?}: {why} (expected e.g. error-rate=0.05,latency=20ms,watch-drop=5s)"
)]
pub struct FaultsError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub why: String,
}

impl std::str::FromStr for Faults {
    type Err = FaultsError;

    fn from_str(spec: &str) -> Result<Self, FaultsError> {
        let err = |why: String| FaultsError {
            spec: spec.to_string(),
            why,
        };
        let mut faults = Faults::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in spec.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(err("an entry is empty".into()));
            }
            let Some((key, value)) = item.split_once('=') else {
                return Err(err(format!("{item:?} is not KEY=VALUE")));
            };
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) && key != "forbid" && key != "deny" {
                return Err(err(format!("{key} is given twice")));
            }
            seen.push(key);
            let duration = |what: &str| {
                crate::manifest::duration::parse(value)
                    .map_err(|e| err(format!("{what}: {e}")))
                    .and_then(|d| {
                        d.try_into()
                            .map_err(|_| err(format!("{what}: {value:?} is out of range")))
                    })
            };
            match key {
                "error-rate" => {
                    let rate = match value.strip_suffix('%') {
                        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
                        None => value.parse::<f64>(),
                    }
                    .map_err(|_| err(format!("error-rate {value:?} is not a number")))?;
                    if !(0.0..=1.0).contains(&rate) {
                        return Err(err(format!(
                            "error-rate {value} is not between 0 and 1 (or 0% and 100%)"
                        )));
                    }
                    faults.error_rate = rate;
                }
                "latency" => faults.latency = duration("latency")?,
                "watch-drop" => {
                    let d: Duration = duration("watch-drop")?;
                    if d.is_zero() {
                        return Err(err("watch-drop must be longer than 0s".into()));
                    }
                    faults.watch_drop = Some(d);
                }
                "forbid" => {
                    let Some((verb, resource)) = value.split_once(':') else {
                        return Err(err(format!(
                            "forbid {value:?} is not VERB:RESOURCE (e.g. create:pods)"
                        )));
                    };
                    if !VERBS.contains(&verb) {
                        return Err(err(format!(
                            "forbid verb {verb:?} is not one of {}",
                            VERBS.join(", ")
                        )));
                    }
                    let (resource, subresource) = match resource.split_once('/') {
                        Some((r, s)) => (r, Some(s.to_string())),
                        None => (resource, None),
                    };
                    if resource.is_empty() || subresource.as_deref() == Some("") {
                        return Err(err(format!("forbid {value:?} names no resource")));
                    }
                    faults.forbid.push(Forbid {
                        verb: verb.to_string(),
                        resource: resource.to_string(),
                        subresource,
                    });
                }
                "deny" => faults.deny.push(value.parse().map_err(err)?),
                other => {
                    return Err(err(format!(
                        "unknown key {other:?} (known: error-rate, latency, watch-drop, forbid)"
                    )));
                }
            }
        }
        Ok(faults)
    }
}

/// What to do with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    /// Serve it.
    Pass,
    /// Answer 500.
    InternalError,
    /// Answer 429 with `Retry-After`.
    TooManyRequests,
}

impl Faults {
    /// True when nothing is injected.
    pub fn is_none(&self) -> bool {
        *self == Faults::default()
    }

    /// True when a request with `verb` on `resource`/`subresource` is to be refused with 403.
    pub fn forbids(&self, verb: &str, resource: &str, subresource: Option<&str>) -> bool {
        self.forbid
            .iter()
            .any(|f| f.matches(verb, resource, subresource))
    }

    /// The fate of a request, given a uniform random number.
    pub fn decide(&self, random: u64) -> Injected {
        let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
        if unit >= self.error_rate {
            Injected::Pass
        } else if random & 1 == 0 {
            Injected::InternalError
        } else {
            Injected::TooManyRequests
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_example_parses() {
        let f: Faults = "error-rate=0.05,latency=20ms,watch-drop=5s"
            .parse()
            .unwrap();
        assert_eq!(f.error_rate, 0.05);
        assert_eq!(f.latency, Duration::from_millis(20));
        assert_eq!(f.watch_drop, Some(Duration::from_secs(5)));
        let pct: Faults = "error-rate=5%".parse().unwrap();
        assert_eq!(pct.error_rate, 0.05);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let why = |s: &str| s.parse::<Faults>().unwrap_err().to_string();
        assert!(why("error-rate=2").contains("between 0 and 1"));
        assert!(why("error-rate=x").contains("not a number"));
        assert!(why("latency=soon").contains("latency"));
        assert!(why("watch-drop=0s").contains("longer than 0s"));
        assert!(why("jitter=1s").contains("unknown key \"jitter\""));
        assert!(why("latency=1s,latency=2s").contains("twice"));
        assert!(why("").contains("empty"));
        assert!(why("error-rate").contains("KEY=VALUE"));
        assert!(why("forbid=pods").contains("VERB:RESOURCE"));
        assert!(why("forbid=destroy:pods").contains("\"destroy\" is not one of"));
        assert!(why("forbid=create:").contains("names no resource"));
        assert!(why("forbid=patch:pods/").contains("names no resource"));
    }

    #[test]
    fn forbid_may_be_given_more_than_once_and_matches_verb_resource_and_subresource() {
        let f: Faults = "forbid=create:pods,forbid=patch:manageddaemonsets/status,forbid=*:nodes"
            .parse()
            .unwrap();
        assert_eq!(f.forbid.len(), 3);
        assert!(f.forbids("create", "pods", None));
        assert!(!f.forbids("delete", "pods", None));
        assert!(!f.forbids("create", "pods", Some("status")));
        assert!(f.forbids("patch", "manageddaemonsets", Some("status")));
        assert!(!f.forbids("patch", "manageddaemonsets", None));
        assert!(f.forbids("watch", "nodes", None));
        assert!(!f.is_none());
    }

    #[test]
    fn the_error_rate_is_the_share_of_failed_requests() {
        let f = Faults {
            error_rate: 0.25,
            ..Faults::default()
        };
        let mut rng = 7u64;
        let mut failed = 0;
        for _ in 0..10_000 {
            if f.decide(crate::nodes::splitmix64(&mut rng)) != Injected::Pass {
                failed += 1;
            }
        }
        assert!((2_200..2_800).contains(&failed), "{failed}");
        assert_eq!(Faults::default().decide(0), Injected::Pass);
    }
}
