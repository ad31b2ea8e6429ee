//! Helm charts: the chart's name and its vendored dependencies, read before `helm template`
//! runs.
//!
//! A plan never downloads a chart: every dependency `Chart.yaml` (or a v1 chart's
//! `requirements.yaml`) lists must be in the chart's `charts/` directory, as `helm dependency
//! build` leaves it (a directory of the dependency's name, or its `NAME-VERSION.tgz`). One
//! that is not is refused with that command in the message.

use super::RenderError;
use super::export::{Kind, Tree};
use crate::manifest::{Limits, ReadBudget};
use crate::source::SourceError;
use serde_json::Value;

/// The file that makes a directory a chart.
pub(crate) const CHART_FILE: &str = "Chart.yaml";

/// What the render needs to know of a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chart {
    /// `name:` of `Chart.yaml`: the release name by default.
    pub name: String,
}

/// Reads the chart in `dir` and checks that its dependencies are vendored.
pub(crate) fn chart(
    tree: &dyn Tree,
    dir: &[String],
    limits: &Limits,
) -> Result<Chart, SourceError> {
    let mut budget = ReadBudget::new(limits);
    let chart_file = child(dir, CHART_FILE);
    let label = tree.label(&chart_file);
    let meta = read_yaml(tree, &chart_file, &mut budget, limits)?;
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| RenderError::Chart {
            file: label.clone(),
            message: "it has no `name:`; a chart needs one (it names the release unless \
                      --release does)"
                .into(),
        })?
        .to_string();
    let mut dependencies: Vec<(String, Value)> = list(&meta, "dependencies")
        .map(|d| (label.clone(), d.clone()))
        .collect();
    let requirements = child(dir, "requirements.yaml");
    if tree.kind(&requirements)? == Kind::File {
        let label = tree.label(&requirements);
        let req = read_yaml(tree, &requirements, &mut budget, limits)?;
        dependencies.extend(list(&req, "dependencies").map(|d| (label.clone(), d.clone())));
    }
    let charts_dir = child(dir, "charts");
    let vendored: Vec<(String, Kind)> = match tree.kind(&charts_dir)? {
        Kind::Dir => tree.list(&charts_dir)?,
        _ => Vec::new(),
    };
    for (file, dep) in dependencies {
        let dep_name = dep.get("name").and_then(Value::as_str).unwrap_or_default();
        let present = vendored.iter().any(|(entry, kind)| {
            (*kind == Kind::Dir && entry == dep_name)
                || (*kind == Kind::File
                    && entry
                        .strip_prefix(dep_name)
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(|rest| rest.ends_with(".tgz")))
        });
        if !present {
            return Err(RenderError::Unvendored {
                file,
                dependency: dep_name.to_string(),
                repository: dep
                    .get("repository")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                chart: tree.label(dir),
            }
            .into());
        }
    }
    Ok(Chart { name })
}

fn child(dir: &[String], name: &str) -> Vec<String> {
    let mut p = dir.to_vec();
    p.push(name.to_string());
    p
}

fn list<'a>(doc: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    doc.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn read_yaml(
    tree: &dyn Tree,
    path: &[String],
    budget: &mut ReadBudget,
    limits: &Limits,
) -> Result<Value, SourceError> {
    let label = tree.label(path);
    let text = String::from_utf8(tree.read(path, budget)?).map_err(|_| SourceError::NotUtf8 {
        file: label.clone(),
    })?;
    let docs = crate::manifest::read_documents(&label, &text, limits)?;
    Ok(docs.into_iter().next().map_or(Value::Null, |d| d.value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::render::export::DirTree;

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

    const CHART: &str = "apiVersion: v2\nname: node-agent\nversion: 0.1.0\n";

    #[test]
    fn a_chart_is_named_by_its_chart_yaml() {
        let (_d, t) = tree(&[("chart/Chart.yaml", CHART)]);
        let c = chart(&t, &["chart".into()], &Limits::default()).unwrap();
        assert_eq!(c.name, "node-agent");
    }

    #[test]
    fn a_dependency_must_be_vendored() {
        let with_dep = format!(
            "{CHART}dependencies:\n- name: common\n  version: 2.x\n  repository: https://charts.example.com\n"
        );
        let (_d, t) = tree(&[("chart/Chart.yaml", &with_dep)]);
        let err = chart(&t, &["chart".into()], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("helm dependency build"), "{err}");
        assert!(
            err.contains("\"common\"") && err.contains("charts.example.com"),
            "{err}"
        );
        for vendored in [
            "chart/charts/common/Chart.yaml",
            "chart/charts/common-2.1.0.tgz",
        ] {
            let (_d, t) = tree(&[("chart/Chart.yaml", &with_dep), (vendored, "x")]);
            assert!(
                chart(&t, &["chart".into()], &Limits::default()).is_ok(),
                "{vendored}"
            );
        }
    }

    #[test]
    fn a_chart_without_a_name_is_refused() {
        let (_d, t) = tree(&[("chart/Chart.yaml", "apiVersion: v2\n")]);
        let err = chart(&t, &["chart".into()], &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("Chart.yaml") && err.contains("name:"), "{err}");
    }
}
