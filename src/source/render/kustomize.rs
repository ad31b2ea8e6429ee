//! Kustomize overlays: which directories a build reads, and refusing remote ones before it
//! runs.
//!
//! `kustomize build --load-restrictor LoadRestrictionsRootOnly` reads files only inside each
//! kustomization's own directory, but its `resources`, `bases` and `components` may name other
//! kustomization directories (`../../base`), or remote ones: a URL, `git::…`,
//! `github.com/org/repo/path?ref=…`. The kustomizations are read here, from the overlay down,
//! so that the render's copy holds exactly the directories the build needs, a remote entry is
//! refused with its file and line before anything runs (a plan must not fetch from the
//! network on a pull request's say-so; `--allow-remote-bases` allows it), and an entry that
//! leaves the repository is refused too.

use super::RenderError;
use super::export::{Kind, Tree, join};
use crate::manifest::Limits;
use crate::manifest::ReadBudget;
use crate::source::SourceError;
use serde_json::Value;

/// The names kustomize looks for, in its order.
pub(crate) const FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Fields whose entries may be other kustomization directories or remote targets.
const DIRECTORY_FIELDS: [&str; 6] = [
    "resources",
    "bases",
    "components",
    "generators",
    "transformers",
    "validators",
];

/// The kustomization file of `dir`, if it has one.
pub(crate) fn file_in(tree: &dyn Tree, dir: &[String]) -> Result<Option<Vec<String>>, SourceError> {
    for name in FILES {
        let mut path = dir.to_vec();
        path.push(name.to_string());
        if tree.kind(&path)? == Kind::File {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// What a kustomization build needs from the tree.
#[derive(Debug, Default)]
pub(crate) struct Needs {
    /// The directories to copy, the overlay first.
    pub dirs: Vec<Vec<String>>,
}

/// Reads the kustomization of `dir` and every local kustomization it names, transitively;
/// refuses remote entries (unless `allow_remote`) and entries that leave the tree.
pub(crate) fn needs(
    tree: &dyn Tree,
    dir: &[String],
    allow_remote: bool,
    enable_helm: bool,
    limits: &Limits,
) -> Result<Needs, SourceError> {
    let mut needs = Needs::default();
    let mut queue = vec![dir.to_vec()];
    let mut budget = ReadBudget::new(limits);
    while let Some(at) = queue.pop() {
        if needs.dirs.contains(&at) {
            continue;
        }
        if needs.dirs.len() >= limits.max_files {
            return Err(SourceError::TooManyFiles {
                path: tree.label(&at),
                limit: limits.max_files,
            });
        }
        needs.dirs.push(at.clone());
        let Some(file) = file_in(tree, &at)? else {
            // Not a kustomization: kustomize itself says so when it matters.
            continue;
        };
        let label = tree.label(&file);
        let bytes = tree.read(&file, &mut budget)?;
        let text = String::from_utf8(bytes).map_err(|_| SourceError::NotUtf8 {
            file: label.clone(),
        })?;
        let docs = crate::manifest::read_documents(&label, &text, limits)?;
        let Some(doc) = docs.into_iter().next() else {
            continue;
        };
        let line_of = |entry: &str| {
            text.lines()
                .position(|l| l.contains(entry))
                .map_or(1, |i| i + 1)
        };
        for field in DIRECTORY_FIELDS {
            for entry in strings(&doc.value, field) {
                let local = join(&at, entry);
                let kind = match &local {
                    Some(path) => tree.kind(path)?,
                    None => Kind::Missing,
                };
                if kind == Kind::Missing && looks_remote(entry) {
                    if allow_remote {
                        continue;
                    }
                    return Err(RenderError::RemoteBase {
                        file: label.clone(),
                        line: line_of(entry),
                        field: field.to_string(),
                        entry: entry.to_string(),
                    }
                    .into());
                }
                let Some(path) = local else {
                    return Err(RenderError::OutsideTree {
                        file: label.clone(),
                        line: line_of(entry),
                        entry: entry.to_string(),
                    }
                    .into());
                };
                if kind == Kind::Dir {
                    queue.push(path);
                }
            }
        }
        if enable_helm {
            helm_charts(
                tree,
                &at,
                &doc.value,
                &label,
                &line_of,
                allow_remote,
                &mut queue,
            )?;
        }
    }
    Ok(needs)
}

/// `helmCharts:` (with `--enable-helm`): the chart home is copied; a chart not vendored there
/// would be pulled from its repository, which is remote.
fn helm_charts(
    tree: &dyn Tree,
    at: &[String],
    doc: &Value,
    label: &str,
    line_of: &dyn Fn(&str) -> usize,
    allow_remote: bool,
    queue: &mut Vec<Vec<String>>,
) -> Result<(), SourceError> {
    let charts = doc.get("helmCharts").and_then(Value::as_array);
    if charts.is_none_or(|c| c.is_empty()) {
        return Ok(());
    }
    let home_text = doc
        .pointer("/helmGlobals/chartHome")
        .and_then(Value::as_str)
        .unwrap_or("charts");
    let Some(home) = join(at, home_text) else {
        return Err(RenderError::OutsideTree {
            file: label.to_string(),
            line: line_of(home_text),
            entry: home_text.to_string(),
        }
        .into());
    };
    if tree.kind(&home)? == Kind::Dir {
        queue.push(home.clone());
    }
    for chart in charts.into_iter().flatten() {
        let name = chart
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let repo = chart
            .get("repo")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = chart
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut vendored = home.clone();
        vendored.push(name.to_string());
        let mut versioned = home.clone();
        versioned.extend([format!("{name}-{version}"), name.to_string()]);
        let here = !name.is_empty()
            && (tree.kind(&vendored)? == Kind::Dir || tree.kind(&versioned)? == Kind::Dir);
        if !here && !repo.is_empty() && !allow_remote {
            return Err(RenderError::RemoteChart {
                file: label.to_string(),
                line: line_of(repo),
                chart: name.to_string(),
                repo: repo.to_string(),
                home: home.join("/"),
            }
            .into());
        }
    }
    Ok(())
}

/// The string entries of a list field.
fn strings<'a>(doc: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    doc.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether kustomize would fetch `entry` (when no local path has that name): a URL, a go-getter
/// or scp-like git address, or a `host.tld/…` path (`github.com/org/repo//dir?ref=v1`).
pub(crate) fn looks_remote(entry: &str) -> bool {
    let e = entry.trim();
    if e.contains("://") || e.starts_with("git::") || e.starts_with("git@") || e.starts_with("gh:")
    {
        return true;
    }
    if e.contains("?ref=") || e.contains("?version=") || e.contains("?submodules=") {
        return true;
    }
    let host = e.split('/').next().unwrap_or_default();
    e.contains('/')
        && host.contains('.')
        && !host.starts_with('.')
        && host
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::render::export::DirTree;

    #[test]
    fn remote_entries_look_remote_and_local_ones_do_not() {
        for remote in [
            "https://github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6",
            "git::https://example.com/org/repo.git//deploy",
            "git@github.com:org/repo.git//base",
            "github.com/cilium/cilium/install/kubernetes?ref=v1.16.0",
            "ssh://git@example.com/org/repo",
            "file:///etc",
            "base?ref=main",
        ] {
            assert!(looks_remote(remote), "{remote}");
        }
        for local in [
            "../base",
            "ds.yaml",
            "../../common/ns.yaml",
            "./components/x",
            "v1.2",
        ] {
            assert!(!looks_remote(local), "{local}");
        }
    }

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, DirTree) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let t = DirTree::new(dir.path()).unwrap();
        (dir, t)
    }

    fn c(p: &str) -> Vec<String> {
        p.split('/').map(str::to_string).collect()
    }

    #[test]
    fn an_overlay_needs_its_bases_transitively() {
        let (_d, t) = tree(&[
            (
                "overlays/prod/kustomization.yaml",
                "resources:\n- ../../base\n- extra.yaml\n",
            ),
            ("overlays/prod/extra.yaml", "kind: ConfigMap"),
            (
                "base/kustomization.yml",
                "resources: [ds.yaml, ../common]\n",
            ),
            ("base/ds.yaml", "kind: DaemonSet"),
            ("common/Kustomization", "resources: []\n"),
        ]);
        let needs = needs(&t, &c("overlays/prod"), false, false, &Limits::default()).unwrap();
        assert_eq!(needs.dirs, [c("overlays/prod"), c("base"), c("common")]);
    }

    #[test]
    fn a_remote_base_is_refused_with_its_file_and_line() {
        let (_d, t) = tree(&[(
            "overlays/prod/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - github.com/acme/agents/base?ref=v1\n",
        )]);
        let err = needs(&t, &c("overlays/prod"), false, false, &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("kustomization.yaml:4:"), "{err}");
        assert!(err.contains("github.com/acme/agents/base?ref=v1"), "{err}");
        assert!(err.contains("--allow-remote-bases"), "{err}");
        assert!(needs(&t, &c("overlays/prod"), true, false, &Limits::default()).is_ok());
    }

    #[test]
    fn an_entry_above_the_root_is_refused() {
        let (_d, t) = tree(&[("k/kustomization.yaml", "resources:\n- ../../../../etc\n")]);
        let err = needs(&t, &c("k"), true, false, &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kustomization.yaml:2:") && err.contains("../../../../etc"),
            "{err}"
        );
    }

    #[test]
    fn a_helm_chart_that_is_not_vendored_would_be_pulled_and_is_refused() {
        let text =
            "helmCharts:\n- name: cilium\n  repo: https://helm.cilium.io\n  version: 1.16.0\n";
        let (_d, t) = tree(&[("k/kustomization.yaml", text)]);
        let err = needs(&t, &c("k"), false, true, &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kustomization.yaml:3:") && err.contains("cilium"),
            "{err}"
        );
        let (_d, t) = tree(&[
            ("k/kustomization.yaml", text),
            ("k/charts/cilium/Chart.yaml", "name: cilium"),
        ]);
        let needs = needs(&t, &c("k"), false, true, &Limits::default()).unwrap();
        assert_eq!(needs.dirs, [c("k"), c("k/charts")]);
    }
}
