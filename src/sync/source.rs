//! Following the source: which version of each DaemonSet is in effect.
//!
//! A source that fails as a whole (unreachable, refused, rewritten history, no DaemonSet at
//! all) keeps the last good commit in effect ([`Tracked`]). A commit in which one DaemonSet is
//! invalid keeps that DaemonSet's last good version in effect and takes the others as they
//! are: DaemonSets are independent. Either way the error is reported (on the records and in
//! the metrics) and nothing is pruned because of it.

use crate::apply::Key;
use crate::cluster::RecordSource;
use crate::manifest::LoadOptions;
use crate::plan::Desired;
use crate::source::{ManifestSource, Refresh, Rendered, Source, Tracked, redact, short_revision};
use std::collections::BTreeMap;

/// What is in effect, and what is wrong with the newest source.
#[derive(Debug, Clone, Default)]
pub struct InEffect {
    /// The desired DaemonSets: the newest valid version of each.
    pub desired: Vec<Desired>,
    /// DaemonSets whose newest version is invalid, with why (their previous version, if
    /// any, is in `desired`).
    pub invalid: BTreeMap<Key, String>,
    /// Why the last read of the source failed as a whole, while it does.
    pub error: Option<String>,
    /// Where the manifests in effect come from (repository, path, commit), for the records.
    pub record: RecordSource,
    /// The revision in effect: the full commit id, or `local:<digest>` for a directory.
    pub revision: Option<String>,
    /// What rendered it (`overlays/prod with kustomize v5.5.0 via kubectl`), when it was
    /// rendered.
    pub rendered: Option<String>,
}

impl InEffect {
    /// The per-DaemonSet source errors written to the records' `SourceError` condition: the
    /// DaemonSet's own invalid version, else the source's failure.
    pub fn source_errors(&self) -> BTreeMap<Key, String> {
        let mut errors = BTreeMap::new();
        for d in &self.desired {
            let key = key_of(d);
            let why = self
                .invalid
                .get(&key)
                .cloned()
                .or_else(|| self.error.clone());
            if let Some(why) = why {
                errors.insert(key, why);
            }
        }
        errors
    }
}

/// What a refresh found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new revision is in effect.
    Updated {
        /// Its revision.
        revision: String,
    },
    /// The source shows the revision already in effect.
    Unchanged,
    /// The source failed; the last good state stays in effect.
    Failed(String),
}

/// A source followed over time.
#[derive(Debug)]
pub struct Follower {
    tracked: Tracked<ManifestSource>,
    load: LoadOptions,
    describe: String,
    in_effect: InEffect,
}

fn key_of(d: &Desired) -> Key {
    let meta = &d.daemonset.metadata;
    (
        meta.namespace.clone().unwrap_or_else(|| "default".into()),
        meta.name.clone().unwrap_or_default(),
    )
}

impl Follower {
    /// Follows `source`; `allow_history_rewrites` follows a force-pushed branch instead of
    /// holding the last good commit until someone looks.
    pub fn new(source: ManifestSource, load: LoadOptions, allow_history_rewrites: bool) -> Self {
        // A git source describes itself as `URL @ REF` with the URL already redacted;
        // redacting that again would take ` @ REF` for the end of a user-info and hide the
        // whole URL.
        let describe = match &source {
            ManifestSource::Git(_) => source.describe(),
            ManifestSource::Local(_) => redact(&source.describe()),
        };
        let mut tracked = Tracked::new(source);
        tracked.allow_history_rewrites = allow_history_rewrites;
        Follower {
            tracked,
            load,
            describe,
            in_effect: InEffect::default(),
        }
    }

    /// The source, as logs and metrics name it (credential-free).
    pub fn describe(&self) -> &str {
        &self.describe
    }

    /// What is in effect.
    pub fn in_effect(&self) -> &InEffect {
        &self.in_effect
    }

    /// Whether the source was read successfully at least once.
    pub fn has_read(&self) -> bool {
        self.tracked.in_effect().is_some()
    }

    /// Reads the source again (blocking: git fetches) and updates what is in effect.
    pub fn refresh(&mut self) -> Change {
        let rendered = match self.tracked.refresh(&self.load) {
            Refresh::Unchanged(_) => {
                let had_error = self.in_effect.error.take().is_some();
                return if had_error {
                    Change::Updated {
                        revision: self.in_effect.revision.clone().unwrap_or_default(),
                    }
                } else {
                    Change::Unchanged
                };
            }
            Refresh::Updated(r) => r.clone(),
            Refresh::Failed { error, .. } => {
                let why = error.to_string();
                self.in_effect.error = Some(why.clone());
                return Change::Failed(why);
            }
        };
        self.take(&rendered);
        Change::Updated {
            revision: rendered.revision,
        }
    }

    /// Puts a new render in effect, DaemonSet by DaemonSet.
    fn take(&mut self, rendered: &Rendered) {
        let mut desired: BTreeMap<Key, Desired> = rendered
            .valid_desired()
            .into_iter()
            .map(|d| (key_of(&d), d))
            .collect();
        let mut invalid = BTreeMap::new();
        for bad in &rendered.manifests.invalid {
            let key = match bad.name.split_once('/') {
                Some((ns, name)) => (ns.to_string(), name.to_string()),
                None => (self.load.default_namespace.clone(), bad.name.clone()),
            };
            let errors: Vec<String> = bad.errors.iter().map(|e| e.to_string()).collect();
            let why = format!(
                "{} ({}) is invalid in revision {}: {}; the previous version stays in effect \
                 until it is fixed",
                bad.name,
                bad.source,
                short_revision(&rendered.revision),
                errors.join("; ")
            );
            if let Some(previous) = self.in_effect.desired.iter().find(|d| key_of(d) == key) {
                desired.insert(key.clone(), previous.clone());
            }
            invalid.insert(key, why);
        }
        let record = crate::source::record_source(self.tracked.source(), &rendered.revision);
        self.in_effect = InEffect {
            desired: desired.into_values().collect(),
            invalid,
            error: None,
            record,
            revision: Some(rendered.revision.clone()),
            rendered: rendered.rendered_line(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::LocalSource;

    fn ds(name: &str, image: &str) -> String {
        ds_with(name, "c", image)
    }

    fn ds_with(name: &str, container: &str, image: &str) -> String {
        format!(
            "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: ns}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: {container}, image: '{image}'}}]
"
        )
    }

    fn image(e: &InEffect, name: &str) -> String {
        let d = e
            .desired
            .iter()
            .find(|d| d.daemonset.metadata.name.as_deref() == Some(name))
            .expect("in effect");
        let spec = d.daemonset.spec.as_ref().unwrap();
        let pod = spec.template.spec.as_ref().unwrap();
        pod.containers[0].image.clone().unwrap()
    }

    #[test]
    fn an_invalid_daemonset_keeps_its_last_good_version_and_the_others_move_on() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("a.yaml", &ds("agent", "agent:1"));
        write("b.yaml", &ds("logs", "logs:1"));
        let source = ManifestSource::Local(LocalSource::new([dir.path()]));
        let mut f = Follower::new(source, LoadOptions::default(), false);
        assert!(matches!(f.refresh(), Change::Updated { .. }));
        assert!(f.has_read());
        // agent becomes invalid (a container name the API server refuses), logs moves on.
        write("a.yaml", &ds_with("agent", "Bad_Name", "agent:2"));
        write("b.yaml", &ds("logs", "logs:2"));
        assert!(matches!(f.refresh(), Change::Updated { .. }));
        let e = f.in_effect();
        assert_eq!(image(e, "agent"), "agent:1");
        assert_eq!(image(e, "logs"), "logs:2");
        let errors = e.source_errors();
        let why = &errors[&("ns".to_string(), "agent".to_string())];
        assert!(why.contains("ns/agent"), "{why}");
        assert!(why.contains("containers[0].name"), "{why}");
        assert!(why.contains("previous version stays in effect"), "{why}");
        assert!(!errors.contains_key(&("ns".to_string(), "logs".to_string())));
        // Fixed: the error clears.
        write("a.yaml", &ds("agent", "agent:3"));
        f.refresh();
        assert_eq!(image(f.in_effect(), "agent"), "agent:3");
        assert!(f.in_effect().source_errors().is_empty());
    }

    #[test]
    fn a_git_source_is_named_by_its_url_and_ref_without_credentials() {
        use crate::source::GitSource;
        let plain = GitSource::new("git://127.0.0.1:9418/fleet", "main", "ds");
        let f = Follower::new(ManifestSource::Git(plain), LoadOptions::default(), false);
        assert_eq!(f.describe(), "git://127.0.0.1:9418/fleet @ main");
        let secret = GitSource::new("https://u:s3cret-token@example.com/fleet", "main", "");
        let f = Follower::new(ManifestSource::Git(secret), LoadOptions::default(), false);
        assert_eq!(f.describe(), "https://***@example.com/fleet @ main");
    }

    #[test]
    fn an_empty_or_vanished_source_keeps_everything_in_effect() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deploy");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("a.yaml"), ds("agent", "agent:1")).unwrap();
        let source = ManifestSource::Local(LocalSource::new([&path]));
        let mut f = Follower::new(source, LoadOptions::default(), false);
        f.refresh();
        std::fs::remove_file(path.join("a.yaml")).unwrap();
        let Change::Failed(why) = f.refresh() else {
            panic!("an empty directory is a failure")
        };
        assert!(why.contains("no manifest file"), "{why}");
        assert_eq!(image(f.in_effect(), "agent"), "agent:1");
        let errors = f.in_effect().source_errors();
        assert_eq!(errors.len(), 1, "the record says why: {errors:?}");
        std::fs::remove_dir(&path).unwrap();
        assert!(matches!(f.refresh(), Change::Failed(_)));
        assert_eq!(f.in_effect().desired.len(), 1);
    }

    #[test]
    fn every_new_revision_is_rendered_again_and_a_failed_render_keeps_the_last_good_one() {
        use crate::source::RenderOptions;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path().join("chart");
        std::fs::create_dir_all(&chart).unwrap();
        std::fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: agent\nversion: 0.1.0\n",
        )
        .unwrap();
        let values = |image: &str| {
            std::fs::write(chart.join("values.yaml"), format!("image: {image}\n")).unwrap()
        };
        values("agent:1");
        // A stand-in helm that renders the image of values.yaml, and fails on `broken`.
        let tools = tempfile::tempdir().unwrap();
        let helm = tools.path().join("helm");
        let manifest = ds("agent", "$image");
        std::fs::write(
            &helm,
            format!(
                "#!/bin/sh\nif [ \"$1\" = version ]; then echo v3.16.2; exit 0; fi\n\
                 image=$(sed -n 's/^image: //p' \"$3/values.yaml\")\n\
                 if [ \"$image\" = broken ]; then echo 'Error: parse error' >&2; exit 1; fi\n\
                 cat <<EOF\n{manifest}EOF\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&helm, std::fs::Permissions::from_mode(0o755)).unwrap();
        let render = RenderOptions {
            tools_path: Some(format!("{}:/usr/bin:/bin", tools.path().display()).into()),
            working_dir: Some(dir.path().to_path_buf()),
            ..RenderOptions::default()
        };
        let source = ManifestSource::Local(LocalSource::new([&chart]).with_render(render));
        let mut f = Follower::new(source, LoadOptions::default(), false);
        assert!(matches!(f.refresh(), Change::Updated { .. }));
        assert_eq!(image(f.in_effect(), "agent"), "agent:1");
        assert_eq!(
            f.in_effect().rendered.as_deref(),
            Some(format!("{} with helm v3.16.2", chart.display()).as_str())
        );
        values("broken");
        let Change::Failed(why) = f.refresh() else {
            panic!("a failed render is a failed source")
        };
        assert!(
            why.contains("helm template agent") && why.contains("Error: parse error"),
            "{why}"
        );
        assert_eq!(
            image(f.in_effect(), "agent"),
            "agent:1",
            "the last good one stays"
        );
        assert_eq!(f.in_effect().source_errors().len(), 1);
        values("agent:2");
        assert!(matches!(f.refresh(), Change::Updated { .. }));
        assert_eq!(image(f.in_effect(), "agent"), "agent:2");
        assert!(f.in_effect().source_errors().is_empty());
    }
}
