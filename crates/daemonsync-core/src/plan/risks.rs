//! Risks: changes a reviewer must not miss, computed from a DaemonSet's plan.
//!
//! Warnings (in [`DaemonSetPlan::warnings`](super::DaemonSetPlan)) are operational notes
//! ("the rollout waits for ..."); risks are the fixed kinds below, each with a message and,
//! where it applies, the nodes concerned. A risk is never also reported as a warning.

use super::context::{Context, Prepared};
use super::rollout::{Budgets, allows_surge};
use super::spec::{DaemonSetSpec, IntOrPercent, UpdateStrategy};
use super::status::Status;
use super::{Name, NodeEntry, NodeState, Ownership, Step};
use k8s_openapi::api::apps::v1::DaemonSet;
use serde::Serialize;

/// What kind of risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RiskKind {
    /// `spec.selector` differs from the live DaemonSet's: it is immutable in Kubernetes.
    SelectorChange,
    /// Host ports (or hostNetwork) with a positive maxSurge: the surge pod cannot bind the
    /// port beside the old one, and the rollout deadlocks.
    HostPortSurge,
    /// Pods will be deleted without replacement (nodes no longer qualify, or are gone).
    PodsRemoved,
    /// maxUnavailable lets every node be down at once.
    AllAtOnce,
    /// OnDelete: nothing rolls until someone deletes the old pods.
    OnDelete,
    /// No node qualifies: the DaemonSet runs nowhere.
    NoEligibleNodes,
    /// The built-in DaemonSet controller runs it (or pods its selector matches): nothing is
    /// written until the manifest takes it over or keeps it native.
    BuiltinController,
    /// Its pods violate the Pod Security level its namespace enforces: the API server will
    /// refuse every one of them.
    PodSecurity,
    /// A new pod's requests exceed what its node has free once the old pod is gone: it will
    /// stay Pending (`Unschedulable`).
    RequestsDoNotFit,
}

impl RiskKind {
    /// The spelling used in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskKind::SelectorChange => "selector-change",
            RiskKind::HostPortSurge => "host-port-surge",
            RiskKind::PodsRemoved => "pods-removed",
            RiskKind::AllAtOnce => "all-at-once",
            RiskKind::OnDelete => "on-delete",
            RiskKind::NoEligibleNodes => "no-eligible-nodes",
            RiskKind::BuiltinController => "builtin-controller",
            RiskKind::PodSecurity => "pod-security",
            RiskKind::RequestsDoNotFit => "requests-do-not-fit",
        }
    }
}

impl std::fmt::Display for RiskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One risk of a DaemonSet's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Risk {
    /// The kind.
    pub kind: RiskKind,
    /// One sentence for people.
    pub message: String,
    /// The nodes concerned, by name (empty when the risk is not about particular nodes).
    pub nodes: Vec<Name>,
}

/// Everything the risks are computed from.
pub(crate) struct Inputs<'a> {
    pub desired: &'a DaemonSet,
    pub live: Option<&'a DaemonSet>,
    pub spec: &'a DaemonSetSpec,
    pub budgets: Budgets,
    pub status: &'a Status,
    pub nodes: &'a [NodeEntry],
    pub step: &'a Step,
    /// No cluster was read: only the risks visible in the manifest are reported.
    pub manifest_only: bool,
    /// Its relation to the built-in controller.
    pub ownership: &'a super::Ownership,
    /// Its namespace, when the cluster has it.
    pub namespace: Option<&'a super::ownership::Namespace>,
}

/// The risks of one DaemonSet's plan, in [`RiskKind`] order.
pub(crate) fn risks(i: &Inputs<'_>) -> Vec<Risk> {
    let mut out = Vec::new();
    let desired = i.status.desired_number_scheduled;

    if let Some(live) = i.live {
        let a = i.desired.spec.as_ref().map(|s| &s.selector);
        let b = live.spec.as_ref().map(|s| &s.selector);
        if a != b {
            out.push(Risk {
                kind: RiskKind::SelectorChange,
                message: "spec.selector differs from the live DaemonSet's; it is immutable in \
                          Kubernetes, so the live object must be deleted and recreated"
                    .into(),
                nodes: Vec::new(),
            });
        }
    }

    // With hostNetwork every container port is a host port (the spec already counts them);
    // hostNetwork without declared ports is not flagged: nothing says what the daemon binds.
    if !i.spec.host_ports.is_empty() && allows_surge(i.spec) {
        let ports: Vec<String> = i.spec.host_ports.iter().map(|p| p.to_string()).collect();
        let what = format!(
            "host port(s) {}{}",
            ports.join(", "),
            if i.spec.host_network {
                " (hostNetwork)"
            } else {
                ""
            }
        );
        out.push(Risk {
            kind: RiskKind::HostPortSurge,
            message: format!(
                "{what} with maxSurge {}: the surge pod cannot bind its port beside the old \
                 pod, so the rollout deadlocks; use maxSurge 0 and maxUnavailable instead",
                match (&i.spec.strategy, i.manifest_only) {
                    (UpdateStrategy::RollingUpdate { max_surge, .. }, true) =>
                        max_surge.to_string(),
                    _ => i.budgets.max_surge.to_string(),
                }
            ),
            nodes: Vec::new(),
        });
    }

    let mut removed: Vec<Name> = i
        .nodes
        .iter()
        .filter(|n| n.state == NodeState::Misscheduled)
        .map(|n| n.node.clone())
        .collect();
    for d in &i.step.delete {
        use super::DeleteReason as R;
        if matches!(
            d.reason,
            R::Misscheduled | R::NodeGone | R::NoLongerEligible
        ) && !removed.contains(&d.node)
        {
            removed.push(d.node.clone());
        }
    }
    if !removed.is_empty() {
        removed.sort();
        out.push(Risk {
            kind: RiskKind::PodsRemoved,
            message: format!(
                "pods will be deleted without replacement on {} node(s): {}",
                removed.len(),
                name_list(&removed, 10)
            ),
            nodes: removed,
        });
    }

    let rolling = matches!(i.spec.strategy, UpdateStrategy::RollingUpdate { .. });
    if let (
        UpdateStrategy::RollingUpdate {
            max_unavailable: max @ IntOrPercent::Percent(100..),
            ..
        },
        true,
    ) = (&i.spec.strategy, i.manifest_only)
    {
        out.push(Risk {
            kind: RiskKind::AllAtOnce,
            message: format!(
                "maxUnavailable {max} lets every node lose its pod at once, however many \
                 nodes there are"
            ),
            nodes: Vec::new(),
        });
    } else if rolling && desired > 1 && i.budgets.max_unavailable >= desired {
        out.push(Risk {
            kind: RiskKind::AllAtOnce,
            message: format!(
                "maxUnavailable resolves to {} of {desired} nodes: every node may lose its \
                 pod at once",
                i.budgets.max_unavailable
            ),
            nodes: Vec::new(),
        });
    }

    if !rolling && i.status.updated_number_scheduled < i.status.current_number_scheduled {
        let old: Vec<Name> = i
            .nodes
            .iter()
            .filter(|n| n.state == NodeState::OutOfDate)
            .map(|n| n.node.clone())
            .collect();
        out.push(Risk {
            kind: RiskKind::OnDelete,
            message: format!(
                "OnDelete: {} node(s) keep their old pod until it is deleted; nothing rolls \
                 by itself",
                i.status.current_number_scheduled - i.status.updated_number_scheduled
            ),
            nodes: old,
        });
    }

    if desired == 0 && !i.manifest_only {
        out.push(Risk {
            kind: RiskKind::NoEligibleNodes,
            message: "no node qualifies for this DaemonSet (nodeSelector, affinity, taints): \
                      it runs nowhere"
                .into(),
            nodes: Vec::new(),
        });
    }

    if let super::Handover::Blocked { why } = &i.ownership.handover {
        out.push(Risk {
            kind: RiskKind::BuiltinController,
            message: why.clone(),
            nodes: Vec::new(),
        });
    }

    if let Some(message) = pod_security(i) {
        out.push(Risk {
            kind: RiskKind::PodSecurity,
            message,
            nodes: Vec::new(),
        });
    }
    out
}

/// The Pod Security checks the template fails at its namespace's enforce level, as a risk
/// message (every pod the DaemonSet creates would be refused).
fn pod_security(i: &Inputs<'_>) -> Option<String> {
    use crate::plan::podsecurity::{Policy, check_template};
    let policy = Policy::enforced_by_namespace_labels(&i.namespace?.labels)?;
    let template = &i.desired.spec.as_ref()?.template;
    let violations = check_template(&policy, template);
    if violations.is_empty() {
        return None;
    }
    let checks: Vec<String> = violations.iter().map(ToString::to_string).collect();
    Some(format!(
        "namespace {} enforces Pod Security \"{policy}\", which refuses every pod of this \
         template: {}; label the namespace with a level the DaemonSet meets \
         (pod-security.kubernetes.io/enforce: privileged), or change the template",
        i.spec.namespace,
        checks.join(", ")
    ))
}

/// `a, b, c and N more`.
fn name_list(names: &[Name], max: usize) -> String {
    let shown: Vec<&str> = names.iter().take(max).map(|n| &**n).collect();
    let mut s = shown.join(", ");
    if names.len() > max {
        s.push_str(&format!(" and {} more", names.len() - max));
    }
    s
}

/// From how many weighed nodes a DaemonSet reads what nodes have free from the plan's shared
/// table ([`Context::free`]) rather than off each node.
const SHARED_FREE_FROM: usize = 64;

impl Context<'_> {
    /// The DaemonSet's risks, from its plan so far.
    pub(super) fn risks(
        &self,
        d: &Prepared<'_>,
        nodes: &[NodeEntry],
        step: &Step,
        ownership: &Ownership,
    ) -> Vec<Risk> {
        let mut out = self.manifest_and_plan_risks(d, nodes, step, ownership);
        if !self.manifest_only
            && let Some(r) = self.requests_do_not_fit(d, nodes)
        {
            out.push(r);
        }
        out
    }

    /// The nodes where a new pod of `d` will not fit once its old pod is gone (with a surge,
    /// beside it): its requests against the node's allocatable less what every pod bound
    /// there requests. Nodes whose resources are not known are not judged.
    fn requests_do_not_fit(&self, d: &Prepared<'_>, nodes: &[NodeEntry]) -> Option<Risk> {
        use crate::model::resources::{Resources, describe};
        let want = &d.spec.requests;
        if want.keys().all(|k| k == "pods") {
            // Only the pod slot itself: the scheduler's pod count is not a capacity concern.
            return None;
        }
        let mut old: Option<Vec<Option<&Resources>>> = None;
        // Per resource: (needed, the most any short node has free, the short nodes).
        let mut short: std::collections::BTreeMap<&str, (i64, i64, Vec<Name>)> =
            std::collections::BTreeMap::new();
        // The rows of the observed nodes come first, in node order: row `i` is the node at
        // position `i` (the vanished nodes after them have none).
        let weighed: Vec<(usize, bool)> = nodes
            .iter()
            .enumerate()
            .take(self.nodes.order.len())
            .filter_map(|(i, entry)| match entry.state {
                NodeState::OutOfDate => Some((i, !d.surge)),
                NodeState::Missing => Some((i, false)),
                _ => None,
            })
            .collect();
        let want: Vec<(&str, i64)> = want
            .iter()
            .filter(|(name, _)| *name != "pods")
            .map(|(name, &need)| (name.as_str(), need))
            .collect();
        // What each node has free: read off the few nodes weighed, or, for many (a rollout
        // across the fleet), from the table the plan shares between its DaemonSets.
        let tables: Option<Vec<std::sync::Arc<[Option<i64>]>>> = (weighed.len() > SHARED_FREE_FROM)
            .then(|| want.iter().map(|(name, _)| self.free(name)).collect());
        let mut backs: Vec<(&Resources, Vec<i64>)> = Vec::new();
        for (i, replaces) in weighed {
            let entry = &nodes[i];
            let node = self.node_at(i as u32);
            debug_assert_eq!(*entry.node, *node.name, "row {i} is not the node at {i}");
            for (r, &(name, need)) in want.iter().enumerate() {
                let free = match &tables {
                    Some(t) => t[r][i],
                    None => super::context::free_on(node, name),
                };
                let Some(free) = free else {
                    continue;
                };
                let credit = if replaces {
                    old.get_or_insert_with(|| self.old_requests(d))[i]
                } else {
                    None
                };
                let back = credit.map_or(0, |c| {
                    // Old pods mostly share a few maps of requests: each is read once.
                    let i = match backs.iter().position(|(m, _)| std::ptr::eq(*m, c)) {
                        Some(i) => i,
                        None => {
                            let amounts = want
                                .iter()
                                .map(|(n, _)| c.get(*n).copied().unwrap_or(0))
                                .collect();
                            backs.push((c, amounts));
                            backs.len() - 1
                        }
                    };
                    backs[i].1[r]
                });
                let free = free + back;
                if need > free {
                    let e = short.entry(name).or_insert((need, i64::MIN, Vec::new()));
                    e.1 = e.1.max(free.max(0));
                    e.2.push(entry.node.clone());
                }
            }
        }
        if short.is_empty() {
            return None;
        }
        let mut all: Vec<Name> = Vec::new();
        let parts: Vec<String> = short
            .iter()
            .map(|(name, (need, free, nodes))| {
                for n in nodes {
                    if !all.contains(n) {
                        all.push(n.clone());
                    }
                }
                format!(
                    "{name} {} needed, {} free on {} node{}: {}",
                    describe(name, *need),
                    describe(name, *free),
                    nodes.len(),
                    if nodes.len() == 1 { "" } else { "s" },
                    name_list(nodes, 10)
                )
            })
            .collect();
        all.sort();
        Some(Risk {
            kind: RiskKind::RequestsDoNotFit,
            message: format!(
                "{}; the new pods will stay Pending (Unschedulable) there: lower the requests, \
                 or make room on those nodes",
                parts.join("; ")
            ),
            nodes: all,
        })
    }

    /// What the pods of `d` not at its new revision request, by the position of their node
    /// (of several on one node, the last claimed).
    fn old_requests<'p>(
        &'p self,
        d: &Prepared<'_>,
    ) -> Vec<Option<&'p crate::model::resources::Resources>> {
        let pods = &self.observed.pods;
        let mut by_node = vec![None; self.nodes.order.len()];
        for id in self.pods.claimed(pods, &d.spec) {
            let p = &pods[id as usize];
            if p.is_terminating() || p.revision_hash() == Some(d.spec.revision.as_str()) {
                continue;
            }
            if let (Some(pos), Some(requests)) = (self.pods.node_position(id), &p.requests) {
                by_node[pos as usize] = Some(&**requests);
            }
        }
        by_node
    }

    /// The risks of the manifest and of the plan's nodes and step.
    fn manifest_and_plan_risks(
        &self,
        d: &Prepared<'_>,
        nodes: &[NodeEntry],
        step: &Step,
        ownership: &Ownership,
    ) -> Vec<Risk> {
        risks(&Inputs {
            desired: d.ds,
            live: d.live,
            spec: &d.spec,
            budgets: d.budgets,
            status: &d.status,
            nodes,
            step,
            manifest_only: self.manifest_only,
            ownership,
            namespace: self
                .observed
                .namespaces
                .iter()
                .find(|n| n.name == d.spec.namespace),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Desired, Observed, Policy, plan};
    use crate::testkit::fixtures::{daemonset, now, pod, revision, worker};
    use serde_json::json;

    fn kinds(p: &crate::plan::Plan) -> Vec<RiskKind> {
        p.daemonsets[0].risks.iter().map(|r| r.kind).collect()
    }

    fn observed(n: usize, hash: &str) -> Observed {
        Observed {
            nodes: (0..n).map(|i| worker(&format!("w{i}"))).collect(),
            pods: (0..n)
                .map(|i| pod("infra", "agent", &format!("w{i}"), hash, true))
                .collect(),
            daemonsets: Vec::new(),
            rollouts: Vec::new(),
            revisions: Vec::new(),
            namespaces: Vec::new(),
            version: None,
        }
    }

    /// Port 9100 bound on the host: through hostPort, or as a containerPort under hostNetwork.
    fn with_host_port(mut d: Desired, host_network: bool) -> Desired {
        let spec = d.daemonset.spec.as_mut().unwrap();
        let pod = spec.template.spec.as_mut().unwrap();
        let port = if host_network {
            pod.host_network = Some(true);
            json!({"containerPort": 9100})
        } else {
            json!({"containerPort": 9100, "hostPort": 9100})
        };
        pod.containers[0].ports = Some(vec![serde_json::from_value(port).unwrap()]);
        d
    }

    #[test]
    fn converged_default_daemonset_has_no_risks() {
        let d = daemonset("infra", "agent", json!({"type": "RollingUpdate"}));
        let rev = revision(&d);
        let p = plan(&[d], &observed(3, &rev), &Policy::default(), now());
        assert!(kinds(&p).is_empty(), "{:?}", p.daemonsets[0].risks);
    }

    #[test]
    fn host_port_with_surge_is_a_deadlock_risk() {
        let surge = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
        for host_network in [false, true] {
            let d = with_host_port(daemonset("infra", "agent", surge.clone()), host_network);
            let p = plan(&[d], &observed(3, "old"), &Policy::default(), now());
            assert_eq!(kinds(&p), [RiskKind::HostPortSurge]);
        }
        let d = with_host_port(
            daemonset("infra", "agent", json!({"type": "RollingUpdate"})),
            false,
        );
        let p = plan(&[d], &observed(3, "old"), &Policy::default(), now());
        assert!(kinds(&p).is_empty());
        // hostNetwork alone says nothing about which ports the daemon binds.
        let mut d = daemonset("infra", "agent", surge);
        let pod = d
            .daemonset
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap();
        pod.host_network = Some(true);
        let p = plan(&[d], &observed(3, "old"), &Policy::default(), now());
        assert!(kinds(&p).is_empty());
    }

    /// A node of `cpu_m` millicores allocatable whose pods request `used_m`.
    fn sized(name: &str, cpu_m: i64, used_m: Option<i64>) -> crate::model::Node {
        let mut n = crate::model::Node::named(name);
        n.labels.insert("role".into(), "worker".into());
        n.allocatable = Some(Box::new([("cpu".to_string(), cpu_m)].into()));
        n.requested = used_m.map(|u| Box::new([("cpu".to_string(), u)].into()));
        n
    }

    fn requesting(mut d: Desired, cpu: &str) -> Desired {
        let pod = d
            .daemonset
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap();
        pod.containers[0].resources =
            Some(serde_json::from_value(json!({"requests": {"cpu": cpu}})).unwrap());
        d
    }

    #[test]
    fn new_requests_that_do_not_fit_once_the_old_pod_is_gone_name_the_nodes() {
        let strategy = json!({"type": "RollingUpdate"});
        let d = requesting(daemonset("infra", "agent", strategy.clone()), "500m");
        let mut o = Observed::default();
        // full: 1000m, 900m used of which the old agent holds 100m → 200m free afterwards.
        // roomy: 300m used → 800m free. unknown: no figures → not judged. empty: no pod yet,
        // 600m used → 400m free.
        for (name, used) in [("full", Some(900)), ("roomy", Some(300)), ("unknown", None)] {
            o.nodes.push(sized(name, 1000, used));
            let mut old = pod("infra", "agent", name, "old", true);
            old.requests = Some(std::sync::Arc::new([("cpu".to_string(), 100)].into()));
            o.pods.push(old);
        }
        o.nodes.push(sized("empty", 1000, Some(600)));
        let p = plan(&[d], &o, &Policy::default(), now());
        let r = p.daemonsets[0]
            .risks
            .iter()
            .find(|r| r.kind == RiskKind::RequestsDoNotFit)
            .expect("the risk");
        assert_eq!(r.nodes, [Name::from("empty"), Name::from("full")]);
        assert_eq!(
            r.message,
            "cpu 500m needed, 400m free on 2 nodes: empty, full; the new pods will stay \
             Pending (Unschedulable) there: lower the requests, or make room on those nodes"
        );
        // With a surge the new pod runs beside the old one: no credit for it.
        let surge = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
        let d = requesting(daemonset("infra", "agent", surge), "250m");
        let p = plan(&[d], &o, &Policy::default(), now());
        let r = p.daemonsets[0]
            .risks
            .iter()
            .find(|r| r.kind == RiskKind::RequestsDoNotFit)
            .expect("the risk");
        assert_eq!(r.nodes, [Name::from("full")], "{}", r.message);
        // Requests that fit everywhere, and a manifest-only plan, say nothing.
        let d = requesting(daemonset("infra", "agent", strategy), "100m");
        let p = plan(&[d], &o, &Policy::default(), now());
        assert!(!kinds(&p).contains(&RiskKind::RequestsDoNotFit));
    }

    #[test]
    fn across_a_fleet_every_daemonset_weighs_each_node_as_it_would_a_few() {
        // More nodes than a DaemonSet reads off one by one: what they have free comes from
        // the table the plan shares, for both DaemonSets, with the same verdicts.
        let strategy = json!({"type": "RollingUpdate"});
        let mut o = Observed::default();
        let mut expected = Vec::new();
        for i in 0..(4 * super::SHARED_FREE_FROM) {
            let (kind, used) = match i % 4 {
                0 => ("full", Some(900)),
                1 => ("roomy", Some(300)),
                2 => ("unknown", None),
                _ => ("empty", Some(600)),
            };
            let name = format!("{kind}-{i:03}");
            o.nodes.push(sized(&name, 1000, used));
            if matches!(kind, "full" | "empty") {
                expected.push(Name::from(name.as_str()));
            }
            if kind == "empty" {
                continue;
            }
            for app in ["agent", "logs"] {
                let mut old = pod("infra", app, &name, "old", true);
                old.requests = Some(std::sync::Arc::new([("cpu".to_string(), 100)].into()));
                o.pods.push(old);
            }
        }
        expected.sort();
        let desired = [
            requesting(daemonset("infra", "agent", strategy.clone()), "500m"),
            requesting(daemonset("infra", "logs", strategy), "500m"),
        ];
        let p = plan(&desired, &o, &Policy::default(), now());
        for ds in &p.daemonsets {
            let r = ds
                .risks
                .iter()
                .find(|r| r.kind == RiskKind::RequestsDoNotFit)
                .expect("the risk");
            assert_eq!(r.nodes, expected, "{}", ds.name);
            assert!(
                r.message
                    .starts_with("cpu 500m needed, 400m free on 128 nodes: empty-003, "),
                "{}",
                r.message
            );
        }
    }

    #[test]
    fn misscheduled_nodes_are_named() {
        let d = daemonset("infra", "agent", json!({"type": "RollingUpdate"}));
        let rev = revision(&d);
        let mut o = observed(2, &rev);
        o.nodes.push(crate::model::Node::named("m1"));
        o.pods.push(pod("infra", "agent", "m1", &rev, true));
        let p = plan(&[d], &o, &Policy::default(), now());
        let r = &p.daemonsets[0].risks;
        assert_eq!(kinds(&p), [RiskKind::PodsRemoved]);
        assert_eq!(r[0].nodes, [Name::from("m1")]);
        assert!(
            r[0].message.ends_with("on 1 node(s): m1"),
            "{}",
            r[0].message
        );
    }

    #[test]
    fn all_at_once_and_no_eligible_nodes() {
        let d = daemonset(
            "infra",
            "agent",
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}}),
        );
        let p = plan(
            std::slice::from_ref(&d),
            &observed(3, "old"),
            &Policy::default(),
            now(),
        );
        assert_eq!(kinds(&p), [RiskKind::AllAtOnce]);
        // One node: all at once is just one.
        let p = plan(
            std::slice::from_ref(&d),
            &observed(1, "old"),
            &Policy::default(),
            now(),
        );
        assert!(kinds(&p).is_empty());
        let empty = Observed {
            nodes: vec![crate::model::Node::named("m1")].into(),
            ..Observed::default()
        };
        let p = plan(&[d], &empty, &Policy::default(), now());
        assert_eq!(kinds(&p), [RiskKind::NoEligibleNodes]);
    }

    #[test]
    fn on_delete_with_old_pods_is_a_risk_not_a_warning() {
        let d = daemonset("infra", "agent", json!({"type": "OnDelete"}));
        let p = plan(&[d], &observed(2, "old"), &Policy::default(), now());
        assert_eq!(kinds(&p), [RiskKind::OnDelete]);
        assert_eq!(p.daemonsets[0].risks[0].nodes.len(), 2);
        assert!(p.daemonsets[0].warnings.is_empty());
    }

    #[test]
    fn selector_change_against_the_live_daemonset() {
        let d = daemonset("infra", "agent", json!({"type": "RollingUpdate"}));
        let mut live = d.daemonset.clone();
        live.spec.as_mut().unwrap().selector =
            serde_json::from_value(json!({"matchLabels": {"app": "agent", "tier": "x"}})).unwrap();
        let mut o = observed(2, "old");
        o.daemonsets.push(live);
        let p = plan(std::slice::from_ref(&d), &o, &Policy::default(), now());
        assert!(
            kinds(&p).contains(&RiskKind::SelectorChange),
            "{:?}",
            kinds(&p)
        );
        let mut o = observed(2, "old");
        o.daemonsets.push(d.daemonset.clone());
        let p = plan(&[d], &o, &Policy::default(), now());
        assert!(!kinds(&p).contains(&RiskKind::SelectorChange));
    }

    #[test]
    fn manifest_only_reports_only_the_risks_the_manifest_shows() {
        use crate::plan::plan_manifests;
        let surge = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0}});
        let d = with_host_port(daemonset("infra", "agent", surge), false);
        let p = plan_manifests(&[d], &Policy::default(), now());
        assert!(p.manifest_only);
        // Not "no eligible nodes": no node was looked at.
        assert_eq!(kinds(&p), [RiskKind::HostPortSurge]);
        let msg = &p.daemonsets[0].risks[0].message;
        assert!(msg.contains("with maxSurge 10%:"), "{msg}");
        assert!(p.daemonsets[0].nodes.is_empty() && !p.has_changes());

        let all = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}});
        let p = plan_manifests(
            &[daemonset("infra", "agent", all)],
            &Policy::default(),
            now(),
        );
        assert_eq!(kinds(&p), [RiskKind::AllAtOnce]);
        assert!(
            p.daemonsets[0].risks[0]
                .message
                .contains("maxUnavailable 100%")
        );

        let d = daemonset("infra", "agent", json!({"type": "OnDelete"}));
        let p = plan_manifests(&[d], &Policy::default(), now());
        assert!(kinds(&p).is_empty(), "{:?}", kinds(&p));
    }
}
