//! `daemonsync promote|pause|resume|freeze|unfreeze|abort NAME`: steer a rollout through the
//! annotations of its `ManagedDaemonSet` record (docs/progressive.md). The executor (`apply`,
//! `sync`) reads them on its next observation:
//!
//! * `promote`: `daemonsync.io/promote: "REVISION:STAGE"`, the pauses after stages up to the
//!   current one of the revision rolling out pass;
//! * `pause`: `daemonsync.io/paused: "true"`, no pod is replaced; a node that has none (it
//!   joined, its pod was deleted) still gets the stable revision's;
//! * `resume`: removes `daemonsync.io/paused` and `daemonsync.io/abort`;
//! * `freeze`: `daemonsync.io/frozen: "true"`, nothing is written for it, for an incident;
//! * `unfreeze`: removes `daemonsync.io/frozen`;
//! * `abort`: `daemonsync.io/abort: "REVISION"`, every node holds where it is until a new
//!   revision (or `resume`).
//!
//! Only a live cluster keeps a record between runs, so these refuse `sim:`, `snapshot:` and
//! `none`.

use crate::cluster::kube::{KubeCluster, KubeOptions, ManagedDaemonSet, describe};
use crate::cluster::{Cluster, ClusterSpec, RolloutStatus};
use crate::manifest::names::{self, Dots};
use crate::model::{FROZEN_ANNOTATION, PAUSED_ANNOTATION};
use crate::plan::RECORD_KIND;
use crate::plan::progressive::{ABORT_ANNOTATION, PROMOTE_ANNOTATION};
use anyhow::{Result, anyhow, bail};
use kube::api::{Api, Patch, PatchParams};
use std::collections::{BTreeMap, BTreeSet};

/// Nodes listed per revision by `abort` before "... and N more".
const MAX_NODES_LISTED: usize = 20;

pub(crate) const PROMOTE_HELP: &str = "\
Examples:
  # The canary of demo/agent looks good: let the rollout continue past it
  daemonsync promote agent -n demo

  # The same in another kubeconfig context
  daemonsync promote agent -n demo --cluster kube:prod-eu

The pause after the stage the rollout is at (the canary, or a wave) passes: at once when the
rollout waits there, else as soon as the stage completes. Later pauses still wait; promote
again at each. The running `daemonsync sync` (or the next `daemonsync apply`) continues the
rollout; promote writes only the record's daemonsync.io/promote annotation.

On a sim: cluster there is nothing to promote (it starts afresh each run): use
`daemonsync apply --auto-promote --cluster sim:FILE`.

Exit status:
  0  promoted (or nothing left to promote)
  1  error (no such record, no progressive rollout, a halted rollout, not a live cluster)";

pub(crate) const PAUSE_HELP: &str = "\
Examples:
  # Stop replacing demo/agent's pods, whatever its rollout policy
  daemonsync pause agent -n demo

  # Then, once the trouble is understood
  daemonsync resume agent -n demo

Writes daemonsync.io/paused: \"true\" on the ManagedDaemonSet record: `daemonsync sync` and
`daemonsync apply` delete no pod of it and put the new revision on no node that runs another,
until `daemonsync resume` (apply exits 4). A node that has no pod (it joined the cluster, or its
pod was deleted) still gets one, of the stable revision (the one the rollout started from; the
current one when no rollout is under way), so no node is left without its daemon. Pods
already running keep running. `daemonsync freeze` stops every write instead. The same as
`kubectl annotate mds agent -n demo daemonsync.io/paused=true`.

In native mode (daemonsync.io/mode: native) daemonsync deletes no pod; the built-in controller
still creates the pod of a new node itself, from the apps/v1 DaemonSet's template.

Exit status:
  0  paused
  1  error (no such record, not a live cluster)";

pub(crate) const FREEZE_HELP: &str = "\
Examples:
  # An incident: nothing more is to be written for demo/agent, not even on new nodes
  daemonsync freeze agent -n demo

  # Then, once it is over
  daemonsync unfreeze agent -n demo

Writes daemonsync.io/frozen: \"true\" on the ManagedDaemonSet record: `daemonsync sync` and
`daemonsync apply` write nothing for the DaemonSet (no pod created or deleted, no readiness
taint removed, no apps/v1 DaemonSet applied), even with `apply --force`, until
`daemonsync unfreeze` (apply exits 4). Pods already running keep running; only its record's
status is still written (a Frozen condition). `daemonsync pause` keeps new nodes served
instead. The same as `kubectl annotate mds agent -n demo daemonsync.io/frozen=true`.

In native mode (daemonsync.io/mode: native) the built-in controller still creates the pod of a
new node itself, from the apps/v1 DaemonSet's template: freeze stops daemonsync, not it.

Exit status:
  0  frozen
  1  error (no such record, not a live cluster)";

pub(crate) const UNFREEZE_HELP: &str = "\
Examples:
  # Undo `daemonsync freeze agent -n demo`
  daemonsync unfreeze agent -n demo

Removes daemonsync.io/frozen from the ManagedDaemonSet record: the rollout continues from where
it stands (a pause or an abort still holds until `daemonsync resume`). The same as
`kubectl annotate mds agent -n demo daemonsync.io/frozen-`.

Exit status:
  0  unfrozen
  1  error (no such record, not a live cluster)";

pub(crate) const RESUME_HELP: &str = "\
Examples:
  # Undo `daemonsync pause agent -n demo` or `daemonsync abort agent -n demo`
  daemonsync resume agent -n demo

Removes daemonsync.io/paused and daemonsync.io/abort from the ManagedDaemonSet record: the
rollout continues from where it stands (a manual pause still waits for `daemonsync promote`).

Exit status:
  0  resumed
  1  error (no such record, not a live cluster)";

pub(crate) const ABORT_HELP: &str = "\
Examples:
  # The canary of demo/agent misbehaves: hold every node where it is
  daemonsync abort agent -n demo

Writes daemonsync.io/abort: REVISION (the revision rolling out) on the ManagedDaemonSet record:
no node gets that revision any more, and none is rolled back either; then prints which nodes
run which revision. A new commit (a new revision) or `daemonsync resume` continues. To go back,
revert the commit: the previous revision then rolls out as any other.

Exit status:
  0  aborted
  1  error (no such record, no revision recorded yet, not a live cluster)";

/// What to do to the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `daemonsync promote`.
    Promote,
    /// `daemonsync pause`.
    Pause,
    /// `daemonsync resume`.
    Resume,
    /// `daemonsync abort`.
    Abort,
    /// `daemonsync freeze`.
    Freeze,
    /// `daemonsync unfreeze`.
    Unfreeze,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Verb::Promote => "promote",
            Verb::Pause => "pause",
            Verb::Resume => "resume",
            Verb::Abort => "abort",
            Verb::Freeze => "freeze",
            Verb::Unfreeze => "unfreeze",
        }
    }
}

/// Flags of `daemonsync promote`, `pause`, `resume` and `abort`.
#[derive(Debug, clap::Args)]
pub struct RolloutArgs {
    /// The DaemonSet: the name of its ManagedDaemonSet record (`kubectl get mds -A` lists
    /// them).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The namespace; defaults to the kubeconfig context's namespace, or `default`.
    #[arg(long, short = 'n', value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// The live cluster: `kube` (the current kubeconfig context, or the in-cluster config;
    /// the default) or `kube:CONTEXT`.
    #[arg(long, short = 'c', value_name = "CLUSTER", default_value = "kube")]
    pub cluster: ClusterSpec,
}

/// `daemonsync VERB NAME` as its flags say, converted and checked once.
#[derive(Debug, Clone)]
pub struct RolloutOptions {
    /// What to do.
    pub verb: Verb,
    /// The record's name.
    pub name: String,
    /// Its namespace; `None`: the kubeconfig context's.
    pub namespace: Option<String>,
    /// The live cluster, as `--cluster` named it (for the hints printed).
    pub cluster: ClusterSpec,
    /// Its kubeconfig context.
    pub context: Option<String>,
}

impl RolloutArgs {
    /// Validates the flags for `verb` into [`RolloutOptions`]: a live cluster, and names the
    /// API server could hold.
    pub fn options(&self, verb: Verb) -> Result<RolloutOptions> {
        let context = live_context(verb, &self.cluster)?;
        check_name("NAME", &self.name, 253)?;
        if let Some(ns) = &self.namespace {
            check_name("--namespace", ns, 63)?;
        }
        Ok(RolloutOptions {
            verb,
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            cluster: self.cluster.clone(),
            context,
        })
    }
}

/// Runs `daemonsync VERB NAME`; returns the exit code.
pub async fn run(verb: Verb, args: &RolloutArgs) -> Result<i32> {
    execute(&args.options(verb)?).await
}

/// Steers the rollout as `opts` say and prints what changed; returns the exit code.
pub async fn execute(opts: &RolloutOptions) -> Result<i32> {
    let options = KubeOptions {
        context: opts.context.clone(),
        ..KubeOptions::default()
    };
    let mut cluster = KubeCluster::connect(options).await?;
    let (mut lines, aborted) = steer(opts, &cluster).await?;
    if let Some(aborted) = aborted {
        let state = cluster.observe().await?;
        lines.extend(revision_lines(
            &state.observed.pods,
            (&aborted.namespace, &opts.name),
            &aborted.revision,
        ));
        lines.push(format!(
            "a new commit or `{}` continues",
            aborted.resume_hint
        ));
    }
    println!("{}", lines.join("\n"));
    Ok(super::EXIT_OK)
}

/// A rollout `abort` stopped: where, and at which revision.
struct Aborted {
    namespace: String,
    revision: String,
    resume_hint: String,
}

/// The kubeconfig context of a live `--cluster`; any other cluster is refused, saying why and
/// what to do instead.
fn live_context(verb: Verb, cluster: &ClusterSpec) -> Result<Option<String>> {
    let sim_hint = match (verb, cluster) {
        (Verb::Promote, ClusterSpec::Sim(path)) => format!(
            "`daemonsync apply --auto-promote --cluster sim:{}` passes manual pauses",
            path.display()
        ),
        _ => "serve it with `daemonsync sim serve` and use --cluster kube against it".into(),
    };
    live_cluster_context(verb.name(), "rollout", cluster, &sim_hint)
}

/// The kubeconfig context of a live `--cluster` for `daemonsync what`, which acts on the
/// `object` a live cluster keeps; any other cluster is refused with `sim_hint` for a sim:.
pub(super) fn live_cluster_context(
    what: &str,
    object: &str,
    cluster: &ClusterSpec,
    sim_hint: &str,
) -> Result<Option<String>> {
    match cluster {
        ClusterSpec::Kube(context) => Ok(context.clone()),
        ClusterSpec::Sim(_) => bail!(
            "`daemonsync {what}` needs a live cluster (--cluster kube or kube:CONTEXT): a sim: \
             cluster starts afresh each run, so it keeps no {object} to {what}; {sim_hint}"
        ),
        ClusterSpec::Snapshot(_) => bail!(
            "`daemonsync {what}` needs a live cluster (--cluster kube or kube:CONTEXT): a \
             snapshot: file is read-only and keeps no {object} to {what}"
        ),
        ClusterSpec::None => {
            bail!("`daemonsync {what}` needs a live cluster: use --cluster kube or kube:CONTEXT")
        }
    }
}

/// Refuses a name the API server could not hold (and that would not make a sound URL path):
/// a lowercase RFC 1123 name of at most `max` characters.
pub(super) fn check_name(what: &str, name: &str, max: usize) -> Result<()> {
    if !names::is_rfc1123_name(name, max, Dots::Ends) {
        bail!(
            "invalid {what} {name:?}: a Kubernetes name is lowercase letters, digits, '-' and \
             '.', starting and ending with a letter or digit, at most {max} characters \
             (`kubectl get mds -A` lists the records)"
        );
    }
    Ok(())
}

/// Reads the record, writes its annotations; returns the lines to print, and for `abort` the
/// revision it stopped.
async fn steer(
    opts: &RolloutOptions,
    cluster: &KubeCluster,
) -> Result<(Vec<String>, Option<Aborted>)> {
    let verb = opts.verb;
    let target = cluster.target().clone();
    let client = cluster.client();
    let namespace = opts
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let name = opts.name.as_str();
    let key = format!("{namespace}/{name}");
    let api: Api<ManagedDaemonSet> = Api::namespaced(client, &namespace);
    let record = api
        .get_opt(name)
        .await
        .map_err(|e| {
            anyhow!(
                "cannot read ManagedDaemonSet {key}: {}",
                describe(&target, &e)
            )
        })?
        .ok_or_else(|| {
            anyhow!(
                "no ManagedDaemonSet {key} in {target}: daemonsync manages no DaemonSet {name} \
                 in namespace {namespace}; `kubectl get mds -A` lists the ones it does (name \
                 the namespace with -n)"
            )
        })?;
    let status = record.status.as_ref();
    let rollout: Option<&RolloutStatus> = status.and_then(|s| s.rollout.as_ref());
    let annotations = record.metadata.annotations.clone().unwrap_or_default();
    let resume_hint = resume_command(name, &namespace, &opts.cluster);

    let (patch, lines) = match verb {
        Verb::Promote => {
            let Some(rollout) = rollout else {
                bail!(
                    "{name} has no progressive rollout (no daemonsync.io/ rollout annotations): \
                     there is no pause to promote; {key} rolls out without stages (see \
                     docs/progressive.md to add a canary or waves)"
                );
            };
            let held = Held {
                paused: annotations
                    .get(PAUSED_ANNOTATION)
                    .is_some_and(|v| v == "true"),
                aborted: annotations.get(ABORT_ANNOTATION) == Some(&rollout.progress.revision),
                frozen: annotations
                    .get(FROZEN_ANNOTATION)
                    .is_some_and(|v| v == "true"),
            };
            promote(&key, rollout, held, &resume_hint)?
        }
        Verb::Pause => {
            let already = annotations
                .get(PAUSED_ANNOTATION)
                .is_some_and(|v| v == "true");
            let mut line = format!(
                "paused {key}: no pod is replaced until `{resume_hint}`; nodes without one still \
                 get the stable revision's"
            );
            if already {
                line.push_str(" (it was paused already)");
            }
            (serde_json::json!({ PAUSED_ANNOTATION: "true" }), vec![line])
        }
        Verb::Freeze => {
            let already = annotations
                .get(FROZEN_ANNOTATION)
                .is_some_and(|v| v == "true");
            let unfreeze = command("unfreeze", name, &namespace, &opts.cluster);
            let mut line = format!("froze {key}: nothing is written for it until `{unfreeze}`");
            if already {
                line.push_str(" (it was frozen already)");
            }
            (serde_json::json!({ FROZEN_ANNOTATION: "true" }), vec![line])
        }
        Verb::Unfreeze => {
            let mut line = format!("unfroze {key}");
            if !annotations.contains_key(FROZEN_ANNOTATION) {
                line.push_str(" (it was not frozen)");
            }
            (serde_json::json!({ FROZEN_ANNOTATION: null }), vec![line])
        }
        Verb::Resume => {
            let was = [PAUSED_ANNOTATION, ABORT_ANNOTATION]
                .iter()
                .any(|a| annotations.contains_key(*a));
            let mut line = format!("resumed {key}");
            if !was {
                line.push_str(" (it was neither paused nor aborted)");
            }
            (
                serde_json::json!({ PAUSED_ANNOTATION: null, ABORT_ANNOTATION: null }),
                vec![line],
            )
        }
        Verb::Abort => {
            let revision = status
                .and_then(|s| s.current_revision.clone())
                .filter(|r| !r.is_empty())
                .or_else(|| rollout.map(|r| r.progress.revision.clone()))
                .filter(|r| !r.is_empty())
                .ok_or_else(|| {
                    anyhow!(
                        "{key} has no revision in its record's status yet (no `daemonsync \
                         apply` or `sync` has written it): there is no rollout to abort; \
                         `daemonsync pause {name} -n {namespace}` stops every pod write instead"
                    )
                })?;
            (
                serde_json::json!({ ABORT_ANNOTATION: revision }),
                vec![format!(
                    "aborted {key} at revision {revision}: every node holds where it is"
                )],
            )
        }
    };
    let Some(patch) = patch_of(patch) else {
        return Ok((lines, None));
    };
    let params = PatchParams {
        field_manager: Some(target.field_manager.clone()),
        ..PatchParams::default()
    };
    api.patch(name, &params, &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            anyhow!(
                "cannot annotate ManagedDaemonSet {key}: {}",
                describe(&target, &e)
            )
        })?;
    let aborted = (verb == Verb::Abort).then(|| Aborted {
        revision: patch["metadata"]["annotations"][ABORT_ANNOTATION]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        namespace,
        resume_hint,
    });
    Ok((lines, aborted))
}

/// The merge patch of `annotations` (`None`: nothing to write).
fn patch_of(annotations: serde_json::Value) -> Option<serde_json::Value> {
    (!annotations.is_null())
        .then(|| serde_json::json!({ "metadata": { "annotations": annotations } }))
}

/// `daemonsync resume NAME -n NAMESPACE`, with the context when one was named.
fn resume_command(name: &str, namespace: &str, cluster: &ClusterSpec) -> String {
    command("resume", name, namespace, cluster)
}

/// `daemonsync VERB NAME -n NAMESPACE`, with the context when one was named.
fn command(verb: &str, name: &str, namespace: &str, cluster: &ClusterSpec) -> String {
    match cluster {
        ClusterSpec::Kube(Some(_)) => {
            format!("daemonsync {verb} {name} -n {namespace} --cluster {cluster}")
        }
        _ => format!("daemonsync {verb} {name} -n {namespace}"),
    }
}

/// What the record's annotations hold the rollout by, besides its policy.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    /// `daemonsync.io/paused: "true"`.
    paused: bool,
    /// `daemonsync.io/abort` names the revision rolling out.
    aborted: bool,
    /// `daemonsync.io/frozen: "true"`.
    frozen: bool,
}

/// The promote annotation for where the rollout stands, and what to print.
fn promote(
    key: &str,
    rollout: &RolloutStatus,
    held: Held,
    resume_hint: &str,
) -> Result<(serde_json::Value, Vec<String>)> {
    let progress = &rollout.progress;
    // The message says why a Paused rollout waits; once it moves on, it means nothing.
    let message = match rollout.phase.as_str() {
        "Paused" => rollout.message.as_deref().unwrap_or_default(),
        _ => "",
    };
    match rollout.phase.as_str() {
        "Complete" => {
            return Ok((
                serde_json::Value::Null,
                vec![format!(
                    "{key}: the rollout of revision {} is complete; nothing to promote",
                    progress.revision
                )],
            ));
        }
        "Halted" => bail!(
            "{key} is halted (new pods failed past its halt threshold): promote passes pauses, \
             not a halt; fix the pods' problem and commit a new revision (`daemonsync status \
             --nodes` shows the failing nodes)"
        ),
        _ => {}
    }
    let patch = serde_json::json!({
        PROMOTE_ANNOTATION: format!("{}:{}", progress.revision, progress.stage),
    });
    let stage_pause = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .map(|rest| rest.split([':', ',']).next().unwrap_or(rest).to_string())
    };
    // The status says what the rollout waited for when it was last written; the annotations
    // say whether it is held now (a `resume` since then leaves the status as it was).
    let line = if held.frozen {
        format!(
            "promoted {key}, but it is frozen: `{}` lets it continue",
            resume_hint.replacen("daemonsync resume", "daemonsync unfreeze", 1)
        )
    } else if held.paused || held.aborted {
        format!(
            "promoted {key}, but its rollout is {}: `{resume_hint}` lets it continue",
            if held.aborted { "aborted" } else { "paused" }
        )
    } else if let Some(after) = stage_pause("manual pause after the ") {
        format!("promoted {key}: the rollout continues past the {after}")
    } else if let Some(after) = stage_pause("pause after the ") {
        format!(
            "promoted {key}: the rollout continues past the {after} without waiting out its \
             pause"
        )
    } else {
        format!(
            "{key}: the pause after the current stage (phase {}) will pass as soon as it is \
             reached",
            rollout.phase
        )
    };
    Ok((patch, vec![line]))
}

/// `  REVISION (new): N nodes: a, b, ...`, one line per revision the record's pods run, the
/// aborted one first, then by number of nodes.
fn revision_lines<'p>(
    pods: impl IntoIterator<Item = &'p crate::model::Pod>,
    (namespace, name): (&str, &str),
    aborted: &str,
) -> Vec<String> {
    let mut by_revision: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    by_revision.entry(aborted.to_string()).or_default();
    for pod in pods {
        let owned = *pod.namespace == *namespace
            && pod
                .controller
                .as_ref()
                .is_some_and(|c| c.kind == RECORD_KIND && c.name == name);
        if !owned || pod.deletion_timestamp.is_some() {
            continue;
        }
        let Some(node) = pod.target_node.as_deref().or(pod.node_name.as_deref()) else {
            continue;
        };
        let revision = pod.revision_hash().unwrap_or("(no revision label)");
        by_revision
            .entry(revision.to_string())
            .or_default()
            .insert(node.to_string());
    }
    let mut groups: Vec<(String, BTreeSet<String>)> = by_revision.into_iter().collect();
    groups.sort_by_key(|(rev, nodes)| (rev != aborted, std::cmp::Reverse(nodes.len())));
    groups
        .into_iter()
        .map(|(rev, nodes)| {
            let tag = if rev == aborted { " (new)" } else { "" };
            let count = nodes.len();
            let mut listed: Vec<String> = nodes.into_iter().take(MAX_NODES_LISTED).collect();
            if count > MAX_NODES_LISTED {
                listed.push(format!("... and {} more", count - MAX_NODES_LISTED));
            }
            let plural = if count == 1 { "" } else { "s" };
            if listed.is_empty() {
                format!("  {rev}{tag}: 0 nodes")
            } else {
                format!("  {rev}{tag}: {count} node{plural}: {}", listed.join(", "))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OwnerRef, Pod};

    fn pod(name: &str, node: &str, rev: &str, owner: &str) -> Pod {
        let mut p = Pod {
            namespace: "demo".into(),
            name: name.into(),
            ..Pod::default()
        };
        p.labels_mut()
            .insert(crate::model::REVISION_HASH_LABEL.into(), rev.into());
        p.node_name = Some(node.into());
        p.target_node = Some(node.into());
        p.controller = Some(crate::model::shared_owner(OwnerRef {
            kind: RECORD_KIND.into(),
            name: owner.into(),
            ..OwnerRef::default()
        }));
        p
    }

    #[test]
    fn abort_lists_the_new_revision_first_then_the_others_by_size() {
        let mut pods = vec![
            pod("a", "n-1", "new", "agent"),
            pod("b", "n-2", "old", "agent"),
            pod("c", "n-3", "old", "agent"),
            pod("d", "n-4", "other", "logger"),
        ];
        let mut gone = pod("e", "n-5", "new", "agent");
        gone.deletion_timestamp = Some("2026-01-01T00:00:00Z".parse().unwrap());
        pods.push(gone);
        let lines = revision_lines(&pods, ("demo", "agent"), "new");
        assert_eq!(
            lines,
            ["  new (new): 1 node: n-1", "  old: 2 nodes: n-2, n-3"]
        );
        let none = revision_lines(&pods, ("demo", "agent"), "newer");
        assert_eq!(none[0], "  newer (new): 0 nodes");
    }

    #[test]
    fn long_node_lists_are_cut() {
        let pods: Vec<Pod> = (0..25)
            .map(|i| pod(&format!("p{i}"), &format!("n-{i:02}"), "old", "agent"))
            .collect();
        let lines = revision_lines(&pods, ("demo", "agent"), "new");
        assert!(
            lines[1].starts_with("  old: 25 nodes: n-00, n-01"),
            "{lines:?}"
        );
        assert!(lines[1].ends_with("n-19, ... and 5 more"), "{lines:?}");
    }

    #[test]
    fn promote_says_what_passes() {
        let status = |phase: &str, message: Option<&str>| RolloutStatus {
            phase: phase.into(),
            message: message.map(str::to_string),
            progress: crate::plan::progressive::Progress {
                revision: "abc".into(),
                stage: 1,
                paused_since: None,
            },
        };
        let hint = "daemonsync resume agent -n demo";
        let (patch, lines) = promote(
            "demo/agent",
            &status(
                "Paused",
                Some("manual pause after the canary: `daemonsync promote` continues"),
            ),
            Held::default(),
            hint,
        )
        .unwrap();
        assert_eq!(patch[PROMOTE_ANNOTATION], "abc:1");
        assert_eq!(
            lines,
            ["promoted demo/agent: the rollout continues past the canary"]
        );
        let (_, lines) = promote(
            "demo/agent",
            &status(
                "Paused",
                Some("manual pause after the wave zone=a: `daemonsync promote` continues"),
            ),
            Held::default(),
            hint,
        )
        .unwrap();
        assert_eq!(
            lines,
            ["promoted demo/agent: the rollout continues past the wave zone=a"]
        );
        let (_, lines) = promote(
            "demo/agent",
            &status("Canary", Some("manual pause after the canary: stale")),
            Held::default(),
            hint,
        )
        .unwrap();
        assert_eq!(
            lines,
            [
                "demo/agent: the pause after the current stage (phase Canary) will pass as soon \
                 as it is reached"
            ]
        );
        let (patch, _) = promote(
            "demo/agent",
            &status("Complete", None),
            Held::default(),
            hint,
        )
        .unwrap();
        assert!(patch.is_null());
        let err =
            promote("demo/agent", &status("Halted", None), Held::default(), hint).unwrap_err();
        assert!(err.to_string().contains("commit a new revision"), "{err}");
        // Paused since the status was written: the annotation, not the stale message, says so.
        let paused = Held {
            paused: true,
            ..Held::default()
        };
        let (patch, lines) = promote(
            "demo/agent",
            &status("Paused", Some("manual pause after the canary: x")),
            paused,
            hint,
        )
        .unwrap();
        assert_eq!(patch[PROMOTE_ANNOTATION], "abc:1");
        assert_eq!(
            lines,
            [
                "promoted demo/agent, but its rollout is paused: `daemonsync resume agent -n \
                 demo` lets it continue"
            ]
        );
        let (_, lines) = promote(
            "demo/agent",
            &status(
                "Paused",
                Some("paused by `daemonsync pause`; `daemonsync resume` continues"),
            ),
            Held::default(),
            hint,
        )
        .unwrap();
        assert!(
            lines[0].starts_with("demo/agent: the pause after"),
            "{lines:?}"
        );
    }

    #[test]
    fn only_a_live_cluster_is_steered() {
        let sim: ClusterSpec = "sim:fleet.yaml".parse().unwrap();
        let err = live_context(Verb::Promote, &sim).unwrap_err().to_string();
        assert!(
            err.contains("apply --auto-promote --cluster sim:fleet.yaml") && !err.contains('\n'),
            "{err}"
        );
        let snap: ClusterSpec = "snapshot:c.yaml".parse().unwrap();
        let err = live_context(Verb::Pause, &snap).unwrap_err().to_string();
        assert!(err.contains("--cluster kube or kube:CONTEXT"), "{err}");
        assert!(live_context(Verb::Abort, &ClusterSpec::None).is_err());
        assert_eq!(
            live_context(Verb::Resume, &"kube:x".parse().unwrap()).unwrap(),
            Some("x".to_string())
        );
    }

    #[test]
    fn names_are_checked_before_any_request() {
        for bad in ["", "Agent", "a/b", "a?b", "-a", "a-", "a b", "ä"] {
            assert!(check_name("NAME", bad, 253).is_err(), "{bad:?}");
        }
        assert!(check_name("NAME", &"a".repeat(64), 63).is_err());
        for good in ["agent", "node-agent.v2", "a"] {
            check_name("NAME", good, 253).unwrap();
        }
    }
}
