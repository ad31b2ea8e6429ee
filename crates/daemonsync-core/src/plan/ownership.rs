//! Beside the built-in DaemonSet controller: whose pods a DaemonSet from git has, and what
//! must happen before daemonsync may roll it out (docs/live.md, "Beside the built-in
//! controller").
//!
//! Every cluster runs the built-in DaemonSet controller, which recreates any pod of its
//! DaemonSet that another writer deletes; two controllers on one DaemonSet never converge. So
//! a DaemonSet in git whose namespace and name match a live `apps/v1` DaemonSet is, by the
//! manifest's choice:
//!
//! * **taken over** (`daemonsync.io/adopt: "true"`): the live object is deleted with orphan
//!   propagation, and its pods, once the garbage collector has cleared their owner
//!   references, are claimed by the record; pods whose template is git's keep running (zero
//!   restarts), the others are rolled within the budgets;
//! * **kept native** (`daemonsync.io/mode: native`): the `apps/v1` DaemonSet stays, under
//!   `OnDelete`; daemonsync deletes old pods in its own order and the built-in controller
//!   creates the new ones;
//! * or, with neither, **blocked**: nothing is written for it, and the plan says why.
//!
//! Pure: decided from the desired DaemonSet, the observed pods, live DaemonSets and
//! ControllerRevisions.

use crate::model::{Labels, OwnerRef, Pod};
use crate::plan::RolloutPolicy;
use crate::plan::context::{Context, Prepared};
use crate::plan::pods::PodIndex;
use crate::plan::spec::DaemonSetSpec;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::Serialize;

// The `adopt` and `mode` annotations' grammar is the manifest's; these paths stay for the
// planner's readers.
pub use crate::manifest::policy::{ADOPT, Choice, MODE, Mode};

/// Annotation daemonsync writes on a native DaemonSet, which runs `OnDelete`: the manifest's
/// own `updateStrategy` (JSON), which daemonsync applies itself.
pub const MANIFEST_STRATEGY: &str = "daemonsync.io/manifest-update-strategy";
/// The annotation (on pods) and label (on PodTemplates) Cluster Autoscaler reads to count a
/// pod of an unknown controller as a DaemonSet pod.
pub const AUTOSCALER_DAEMONSET_POD: &str = "cluster-autoscaler.kubernetes.io/daemonset-pod";

/// A ControllerRevision, as daemonsync reads it: whose, which hash, which template.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerRevision {
    /// Namespace.
    pub namespace: String,
    /// Name (`NAME-HASH` for a DaemonSet's).
    pub name: String,
    /// Its controller, if it has one (none once its DaemonSet was deleted with orphan
    /// propagation).
    pub controller: Option<OwnerRef>,
    /// `controller-revision-hash`: what the pods of this revision carry.
    pub hash: String,
    /// Its number.
    pub revision: i64,
    /// Its labels (the template's, and the hash).
    pub labels: Labels,
    /// The pod template it records.
    pub template: PodTemplateSpec,
}

impl ControllerRevision {
    /// Reads an `apps/v1` ControllerRevision of a DaemonSet (`data.spec.template`); `None`
    /// when it records something else.
    pub fn from_k8s(cr: &k8s_openapi::api::apps::v1::ControllerRevision) -> Option<Self> {
        let meta = &cr.metadata;
        let mut template = cr.data.as_ref()?.0.get("spec")?.get("template")?.clone();
        if let Some(m) = template.as_object_mut() {
            m.remove("$patch");
        }
        let template = serde_json::from_value(template).ok()?;
        let labels = meta.labels.clone().unwrap_or_default();
        Some(ControllerRevision {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            controller: meta
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true))
                .map(|r| OwnerRef {
                    api_version: r.api_version.clone(),
                    kind: r.kind.clone(),
                    name: r.name.clone(),
                    uid: r.uid.clone(),
                }),
            hash: labels
                .get(crate::model::REVISION_HASH_LABEL)
                .cloned()
                .unwrap_or_else(|| meta.name.clone().unwrap_or_default()),
            revision: cr.revision,
            labels,
            template,
        })
    }
}

/// A namespace: its labels say its Pod Security level.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Namespace {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: Labels,
}

impl Namespace {
    /// The namespace an API object describes.
    pub fn from_k8s(n: &k8s_openapi::api::core::v1::Namespace) -> Self {
        Namespace {
            name: n.metadata.name.clone().unwrap_or_default(),
            labels: n.metadata.labels.clone().unwrap_or_default(),
        }
    }
}

/// How a DaemonSet from git relates to the built-in controller (the plan's `ownership`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ownership {
    /// Who runs its pods.
    pub mode: Mode,
    /// The live `apps/v1` DaemonSet of the same namespace and name, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub builtin: Option<String>,
    /// What must happen before the rollout.
    pub handover: Handover,
    /// Pods the handover keeps running: their template is git's (zero restarts).
    pub kept: usize,
    /// Pods the handover leaves on another template: rolled within the budgets afterwards.
    pub replaced: usize,
    /// Native mode with `maxSurge` and no rollout policy: the built-in controller rolls the
    /// DaemonSet out with its own RollingUpdate (the only way to surge), and daemonsync
    /// reports it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub builtin_rollout: bool,
}

impl Ownership {
    /// A managed DaemonSet with nothing to hand over (not shown in the plan's JSON).
    pub fn is_plain(&self) -> bool {
        self.mode == Mode::Managed && self.builtin.is_none() && self.handover == Handover::None
    }

    /// What the manifest alone says (no cluster read).
    pub fn of_manifest(ds: &DaemonSet) -> Self {
        Ownership {
            mode: Choice::of(ds).mode,
            builtin: None,
            handover: Handover::None,
            kept: 0,
            replaced: 0,
            builtin_rollout: false,
        }
    }
}

/// What must happen before daemonsync rolls a DaemonSet out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum Handover {
    /// Nothing: daemonsync drives it.
    None,
    /// Another controller runs it and the manifest chose nothing: nothing is written.
    Blocked {
        /// Why, and the choices.
        why: String,
    },
    /// The live DaemonSet is deleted with orphan propagation (its uid the precondition).
    TakeOver {
        /// The live DaemonSet's uid.
        uid: String,
    },
    /// The pods still name a controller that is going: the garbage collector clears their
    /// owner references first.
    Waiting {
        /// What is awaited.
        why: String,
    },
    /// Pods without a controller are claimed by the record.
    Claim {
        /// The pods, in node order.
        pods: Vec<Claim>,
    },
    /// The `apps/v1` DaemonSet is written (native mode): git's template under `OnDelete`.
    ApplyNative,
    /// Going native: the record's pods are handed to the built-in controller first.
    Release,
    /// Native: pods the built-in controller adopted that run its current template take the
    /// hash of its ControllerRevision and the template generation, so that it counts them
    /// as updated (no restart).
    Relabel {
        /// The pods, by name.
        pods: Vec<String>,
        /// The ControllerRevision's hash.
        hash: String,
        /// The DaemonSet's template generation.
        generation: i64,
    },
}

impl Handover {
    /// True when nothing may be written for the DaemonSet's pods until it is done.
    pub fn holds_the_rollout(&self) -> bool {
        !matches!(self, Handover::None | Handover::ApplyNative)
    }
}

/// A pod the record claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its node.
    pub node: String,
    /// Its template is git's: it takes daemonsync's revision label and keeps running.
    pub keep: bool,
}

/// What the ownership decision reads.
pub(crate) struct Inputs<'a> {
    pub ds: &'a DaemonSet,
    pub spec: &'a DaemonSetSpec,
    pub choice: Choice,
    /// The live `apps/v1` DaemonSet of the same namespace and name.
    pub live: Option<&'a DaemonSet>,
    /// Every live `apps/v1` DaemonSet.
    pub daemonsets: &'a [DaemonSet],
    pub pods: &'a crate::model::Pods,
    /// `pods`, indexed by controller and namespace.
    pub index: &'a PodIndex<'a>,
    pub revisions: &'a [ControllerRevision],
}

fn owner_is(o: &OwnerRef, kind: &str, name: &str) -> bool {
    let group = o.api_version.split_once('/').map_or("", |(g, _)| g);
    o.kind == kind
        && o.name == name
        && match kind {
            "DaemonSet" => matches!(group, "apps" | "extensions"),
            _ => group == crate::plan::RECORD_GROUP,
        }
}

fn is_builtin(o: &OwnerRef) -> bool {
    let group = o.api_version.split_once('/').map_or("", |(g, _)| g);
    o.kind == "DaemonSet" && matches!(group, "apps" | "extensions")
}

fn display(ds: &DaemonSet) -> String {
    format!(
        "{}/{}",
        ds.metadata.namespace.as_deref().unwrap_or("default"),
        ds.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The pods among `ids` (in observed order) that are in the DaemonSet's namespace, match its
/// selector and are not terminating. Callers pass the candidates of [`PodIndex`] that can
/// pass their own filter, so that no DaemonSet reads every pod of the cluster.
fn selected<'a>(i: &'a Inputs<'_>, ids: &'a [u32]) -> impl Iterator<Item = &'a Pod> + 'a {
    let selector = i.spec.selector.as_ref();
    ids.iter().map(|&id| &i.pods[id as usize]).filter(move |p| {
        *p.namespace == *i.spec.namespace
            && !p.is_terminating()
            && selector.is_some_and(|s| !s.is_empty() && s.matches(&p.labels))
    })
}

/// Whether a pod runs git's template: its revision hash is one whose ControllerRevision (or,
/// while it lives, the live DaemonSet's current template) equals git's template, or it
/// already carries daemonsync's revision.
fn runs_gits_template(i: &Inputs<'_>, pod: &Pod, equivalent_hashes: &[&str]) -> bool {
    let hash = pod.revision_hash();
    if hash == Some(i.spec.revision.as_str()) {
        return true;
    }
    if hash.is_some_and(|h| equivalent_hashes.contains(&h)) {
        return true;
    }
    // The live DaemonSet's template generation, when its template is git's.
    i.spec
        .template_generation
        .is_some_and(|g| crate::plan::is_pod_updated(pod, "", Some(g)))
}

/// The hashes of the ControllerRevisions in the namespace whose template is git's (the
/// revisions of a taken-over DaemonSet outlive it, orphaned).
fn equivalent_hashes<'a>(i: &'a Inputs<'_>) -> Vec<&'a str> {
    let git = i.ds.spec.as_ref().map(|s| &s.template);
    i.revisions
        .iter()
        .filter(|r| r.namespace == i.spec.namespace)
        .filter(|r| {
            i.spec
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(&r.labels))
        })
        .filter(|r| {
            git.is_some() && {
                let mut recorded = i.ds.clone();
                if let Some(spec) = recorded.spec.as_mut() {
                    spec.template = r.template.clone();
                }
                crate::plan::live::template_differences(i.ds, &recorded).is_empty()
            }
        })
        .map(|r| r.hash.as_str())
        .collect()
}

/// Native: the pods the live DaemonSet owns that run git's template under daemonsync's
/// revision label (released to it, or adopted) and lack its ControllerRevision's hash.
fn relabel(i: &Inputs<'_>, live: &DaemonSet, equivalent: &[&str]) -> Option<Handover> {
    let uid = live.metadata.uid.as_deref()?;
    let current = i
        .revisions
        .iter()
        .filter(|r| r.controller.as_ref().is_some_and(|o| o.uid == uid))
        .filter(|r| equivalent.contains(&r.hash.as_str()))
        .max_by_key(|r| r.revision)?;
    let generation: i64 = live
        .metadata
        .annotations
        .as_ref()?
        .get(crate::model::TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()?;
    let mut pods: Vec<String> = selected(i, i.index.controlled_by(uid))
        .filter(|p| p.controller.as_ref().is_some_and(|o| o.uid == uid))
        .filter(|p| p.revision_hash() == Some(i.spec.revision.as_str()))
        .map(|p| p.name.clone())
        .collect();
    pods.sort();
    (!pods.is_empty()).then(|| Handover::Relabel {
        pods,
        hash: current.hash.clone(),
        generation,
    })
}

/// Decides a DaemonSet's ownership and handover.
pub(crate) fn decide(i: &Inputs<'_>) -> Ownership {
    let live = i.live.filter(|l| l.metadata.deletion_timestamp.is_none());
    let builtin = i.live.map(display);
    let hashes = equivalent_hashes(i);
    let count = |pods: &mut dyn Iterator<Item = &Pod>| {
        pods.fold((0, 0), |(k, r), p| {
            if runs_gits_template(i, p, &hashes) {
                (k + 1, r)
            } else {
                (k, r + 1)
            }
        })
    };
    let ownership = |handover, (kept, replaced)| Ownership {
        mode: i.choice.mode,
        builtin: builtin.clone(),
        handover,
        kept,
        replaced,
        builtin_rollout: false,
    };
    let name = i.spec.name.as_str();
    if i.choice.mode == Mode::Native {
        let ours = selected(i, i.index.owned_by(&i.spec.namespace, name))
            .filter(|p| {
                p.controller
                    .as_ref()
                    .is_some_and(|o| owner_is(o, crate::plan::RECORD_KIND, name))
            })
            .count();
        let handover = if ours > 0 {
            Handover::Release
        } else {
            live.and_then(|l| relabel(i, l, &hashes))
                .unwrap_or(Handover::ApplyNative)
        };
        return ownership(handover, (0, 0));
    }
    // Managed.
    if let Some(live) = live {
        let builtin = i.index.builtin(&i.spec.namespace);
        let theirs = count(
            &mut selected(i, builtin)
                .filter(|p| p.controller.as_ref().is_some_and(|c| is_builtin(c))),
        );
        let handover = if i.choice.adopt {
            Handover::TakeOver {
                uid: live.metadata.uid.clone().unwrap_or_default(),
            }
        } else {
            Handover::Blocked {
                why: format!(
                    "the built-in DaemonSet controller runs {}: two controllers never \
                     converge on one DaemonSet. Take it over with the annotation \
                     daemonsync.io/adopt: \"true\" (its pods are kept, those on another \
                     template rolled within the budgets), or keep it native with \
                     daemonsync.io/mode: native (daemonsync paces the built-in controller \
                     under OnDelete)",
                    display(live)
                ),
            }
        };
        return ownership(handover, theirs);
    }
    if let Some(going) = i.live {
        return ownership(
            Handover::Waiting {
                why: format!(
                    "{} is being deleted; its pods are claimed once the garbage collector \
                     has cleared their owner references",
                    display(going)
                ),
            },
            (0, 0),
        );
    }
    // Pods another DaemonSet owns: one of the same name that is gone (the collector has not
    // cleared them yet), or another live one whose pods the selector overlaps.
    let foreign: Vec<&Pod> = selected(i, i.index.builtin(&i.spec.namespace))
        .filter(|p| p.controller.as_ref().is_some_and(|c| is_builtin(c)))
        .collect();
    if let Some(p) = foreign.first() {
        let owner = p.controller.as_ref().map(|o| o.name.as_str()).unwrap_or("");
        let alive = i.daemonsets.iter().any(|d| {
            d.metadata.name.as_deref() == Some(owner)
                && d.metadata.namespace.as_deref().unwrap_or("default") == i.spec.namespace
        });
        if owner != name && alive {
            return ownership(
                Handover::Blocked {
                    why: format!(
                        "the selector of {}/{name} matches {} pod(s) of the DaemonSet {}/{owner}, \
                         which the built-in controller runs: narrow the selector, or take that \
                         DaemonSet over",
                        i.spec.namespace,
                        foreign.len(),
                        i.spec.namespace
                    ),
                },
                (0, 0),
            );
        }
        return ownership(
            Handover::Waiting {
                why: format!(
                    "{} pod(s) still name the deleted DaemonSet {}/{owner}; the garbage \
                     collector clears their owner references",
                    foreign.len(),
                    i.spec.namespace
                ),
            },
            count(&mut foreign.iter().copied()),
        );
    }
    let orphans: Vec<&Pod> = selected(i, i.index.orphans(&i.spec.namespace))
        .filter(|p| p.controller.is_none())
        .collect();
    if orphans.is_empty() {
        return ownership(Handover::None, (0, 0));
    }
    let mut claims: Vec<Claim> = orphans
        .iter()
        .map(|p| Claim {
            namespace: p.namespace.to_string(),
            name: p.name.clone(),
            node: p.target_node.as_deref().unwrap_or_default().to_string(),
            keep: runs_gits_template(i, p, &hashes),
        })
        .collect();
    claims.sort_by(|a, b| (&a.node, &a.name).cmp(&(&b.node, &b.name)));
    let kept = claims.iter().filter(|c| c.keep).count();
    let replaced = claims.len() - kept;
    ownership(Handover::Claim { pods: claims }, (kept, replaced))
}

impl Context<'_> {
    /// Who runs the DaemonSet's pods beside the built-in controller, and what must happen
    /// first (nothing to decide without a cluster, or as the built-in controller); in native
    /// mode, who rolls it out when it surges.
    pub(super) fn ownership(&self, d: &Prepared<'_>, warnings: &mut Vec<String>) -> Ownership {
        let (ds, budgets) = (d.ds, d.budgets);
        let mut ownership = if self.manifest_only || self.builtin {
            Ownership::of_manifest(ds)
        } else {
            decide(&Inputs {
                ds,
                spec: &d.spec,
                choice: Choice::of(ds),
                live: d.live,
                daemonsets: &self.observed.daemonsets,
                pods: &self.observed.pods,
                index: &self.pods,
                revisions: &self.observed.revisions,
            })
        };
        if ownership.mode == Mode::Native {
            let paced = d
                .annotated
                .policy
                .as_ref()
                .is_some_and(RolloutPolicy::paces);
            ownership.builtin_rollout = budgets.max_surge > 0 && !paced;
            if budgets.max_surge > 0 && paced {
                warnings.push(format!(
                    "maxSurge ({}) cannot work in native mode with a rollout policy: the \
                     built-in controller runs the DaemonSet under OnDelete, so a new pod only \
                     comes once its old one is deleted; maxUnavailable ({}) paces the rollout",
                    budgets.max_surge, budgets.max_unavailable
                ));
            } else if ownership.builtin_rollout {
                warnings.push(
                    "native mode with maxSurge and no rollout policy: the built-in controller \
                     rolls the DaemonSet out with its own RollingUpdate; daemonsync reports it"
                        .to_string(),
                );
            }
        }
        ownership
    }
}
