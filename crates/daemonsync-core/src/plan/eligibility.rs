//! Node eligibility (`NodeShouldRunDaemonPod`): nodeName, nodeSelector, required node
//! affinity, taints and tolerations.
//!
//! Everything a DaemonSet contributes is compiled once
//! ([`compile_required_affinity`](crate::plan::affinity::compile_required_affinity),
//! [`crate::plan::spec::DaemonSetSpec::compile`]); [`evaluate`] then runs per node
//! without allocating unless the node turns out to be ineligible and a reason is built.

use crate::model::{Node, Taint, TaintEffect, Toleration, TolerationOp};
use crate::plan::Policy;
use crate::plan::affinity::NodeSelectorTerm;
use crate::plan::spec::DaemonSetSpec;
use std::fmt::{self, Write as _};

/// Outcome of [`evaluate`] for one (DaemonSet, node) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eligibility {
    /// A daemon pod should run on the node (create one if missing).
    pub should_run: bool,
    /// An existing daemon pod may stay (implied by `should_run`; also true when only
    /// `NoSchedule` taints are untolerated).
    pub should_continue_running: bool,
    /// Why the node is ineligible; `None` exactly when `should_run`. Shared: a DaemonSet's
    /// eligibility is kept between plans and its node rows name the same reason.
    pub reason: Option<std::sync::Arc<Ineligible>>,
}

impl Eligibility {
    const ELIGIBLE: Eligibility = Eligibility {
        should_run: true,
        should_continue_running: true,
        reason: None,
    };
}

/// Why a DaemonSet does not (or no longer) run on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ineligible {
    /// The template's `nodeName` pins the pod to another node.
    NodeName {
        /// The node the template names.
        wanted: String,
    },
    /// A `nodeSelector` entry is missing or different on the node (the first one in key
    /// order).
    NodeSelector {
        /// Label key.
        key: String,
        /// Value the template wants.
        wanted: String,
        /// Value on the node, `None` when the label is absent.
        actual: Option<String>,
    },
    /// No required node-affinity term matches.
    NodeAffinity {
        /// Which requirement of which term failed, for humans.
        detail: String,
    },
    /// An untolerated `NoSchedule` or `NoExecute` taint. When some `NoExecute` taint is
    /// untolerated this is the first such one (it is what evicts running pods); otherwise the
    /// first untolerated `NoSchedule` taint, in node order.
    Taint {
        /// The taint.
        taint: Taint,
    },
}

impl fmt::Display for Ineligible {
    /// A short phrase for plans and PR comments, e.g.
    /// `nodeSelector kubernetes.io/os=linux (node has windows)` or
    /// `taint nvidia.com/gpu=present:NoSchedule not tolerated`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ineligible::NodeName { wanted } => write!(f, "nodeName pins the pod to {wanted}"),
            Ineligible::NodeSelector {
                key,
                wanted,
                actual: Some(actual),
            } => write!(f, "nodeSelector {key}={wanted} (node has {actual})"),
            Ineligible::NodeSelector {
                key,
                wanted,
                actual: None,
            } => write!(f, "nodeSelector {key}={wanted} (node has no {key} label)"),
            Ineligible::NodeAffinity { detail } => f.write_str(detail),
            Ineligible::Taint { taint } => write!(f, "taint {taint} not tolerated"),
        }
    }
}

/// Upstream `NodeShouldRunDaemonPod`: decides whether the DaemonSet should run on `node`
/// (docs/semantics.md §3). Checks, in order: template `nodeName`, `nodeSelector`,
/// required node affinity, then `NoSchedule`/`NoExecute` taints against the template's
/// tolerations plus the automatic DaemonSet tolerations. Allocation-free when the node is
/// eligible.
///
/// Cost is dominated by node-label lookups; callers evaluating many DaemonSets should loop
/// over DaemonSets inside the loop over nodes, so each node's labels stay in cache.
pub fn evaluate(ds: &DaemonSetSpec, node: &Node, policy: &Policy) -> Eligibility {
    evaluate_shared(ds, node, policy, &mut None)
}

/// [`evaluate`], re-using `last` (the reason found for the previous node of a row) when this
/// node is ineligible for the same reason: the nodes of one pool share one reason.
pub fn evaluate_shared(
    ds: &DaemonSetSpec,
    node: &Node,
    policy: &Policy,
    last: &mut Option<std::sync::Arc<Ineligible>>,
) -> Eligibility {
    match judge(ds, node, policy) {
        None => Eligibility::ELIGIBLE,
        Some((reason, should_continue_running)) => {
            let reason = match last {
                Some(l) if **l == reason => std::sync::Arc::clone(l),
                _ => last.insert(std::sync::Arc::new(reason)).clone(),
            };
            Eligibility {
                should_run: false,
                should_continue_running,
                reason: Some(reason),
            }
        }
    }
}

/// Why `node` is ineligible, and whether a running pod may stay; `None` when it is eligible.
fn judge(ds: &DaemonSetSpec, node: &Node, policy: &Policy) -> Option<(Ineligible, bool)> {
    if let Some(wanted) = &ds.node_name
        && *wanted != node.name
    {
        return Some((
            Ineligible::NodeName {
                wanted: wanted.clone(),
            },
            false,
        ));
    }
    for (key, wanted) in &ds.node_selector {
        let actual = node.labels.get(key);
        if actual != Some(wanted) {
            return Some((
                Ineligible::NodeSelector {
                    key: key.clone(),
                    wanted: wanted.clone(),
                    actual: actual.cloned(),
                },
                false,
            ));
        }
    }
    if let Some(terms) = &ds.required_affinity
        && !terms.iter().any(|t| t.matches(node))
    {
        return Some((
            Ineligible::NodeAffinity {
                detail: describe_affinity_mismatch(terms, node),
            },
            false,
        ));
    }
    let mut first_no_schedule: Option<&Taint> = None;
    for taint in &node.taints {
        if taint.effect == TaintEffect::PreferNoSchedule
            || ds.tolerations.iter().any(|t| tolerates(t, taint, policy))
        {
            continue;
        }
        if taint.effect == TaintEffect::NoExecute {
            return Some((
                Ineligible::Taint {
                    taint: taint.clone(),
                },
                false,
            ));
        }
        first_no_schedule.get_or_insert(taint);
    }
    first_no_schedule.map(|taint| {
        (
            Ineligible::Taint {
                taint: taint.clone(),
            },
            true,
        )
    })
}

fn describe_affinity_mismatch(terms: &[NodeSelectorTerm], node: &Node) -> String {
    let mut out = String::from("no required node-affinity term matches");
    match terms {
        [] => out.push_str(": the term list is empty"),
        [term] => {
            let _ = write!(out, ": {}", term.describe_mismatch(node));
        }
        _ => {
            for (i, term) in terms.iter().enumerate() {
                let sep = if i == 0 { ": " } else { "; " };
                let _ = write!(out, "{sep}term {}: {}", i + 1, term.describe_mismatch(node));
            }
        }
    }
    out
}

/// Upstream `Toleration.ToleratesTaint`: effect empty or equal, key empty or equal, then the
/// operator (`Equal`: values equal; `Exists`: always; `Lt`/`Gt`: integer comparison of taint
/// value against toleration value, only with [`Policy::taint_comparison_operators`], else
/// nothing; unknown operators tolerate nothing).
pub fn tolerates(tol: &Toleration, taint: &Taint, policy: &Policy) -> bool {
    match &tol.effect {
        None => {}
        Some(Ok(effect)) if *effect == taint.effect => {}
        Some(_) => return false,
    }
    if tol.key.as_ref().is_some_and(|k| *k != taint.key) {
        return false;
    }
    match &tol.operator {
        TolerationOp::Equal => tol.value == taint.value,
        TolerationOp::Exists => true,
        TolerationOp::Lt | TolerationOp::Gt if policy.taint_comparison_operators => {
            let (Ok(taint_value), Ok(tol_value)) =
                (taint.value.parse::<i64>(), tol.value.parse::<i64>())
            else {
                return false;
            };
            if tol.operator == TolerationOp::Lt {
                taint_value < tol_value
            } else {
                taint_value > tol_value
            }
        }
        TolerationOp::Lt | TolerationOp::Gt | TolerationOp::Other(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::affinity::compile_required_affinity;
    use serde_json::{Value, json};

    /// A DaemonSet `foo` with the L1 labels and the given template `spec` fields merged in.
    fn ds(template_spec: Value) -> DaemonSetSpec {
        let mut spec = json!({"containers": [{"name": "c", "image": "img"}]});
        for (k, v) in template_spec.as_object().expect("object") {
            spec[k] = v.clone();
        }
        let ds = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "foo", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"name": "simple-daemon", "type": "production"}},
                "template": {
                    "metadata": {"labels": {"name": "simple-daemon", "type": "production"}},
                    "spec": spec,
                },
            },
        });
        DaemonSetSpec::compile(&serde_json::from_value(ds).expect("valid DaemonSet"))
    }

    fn node(labels: &[(&str, &str)]) -> Node {
        let mut n = Node::named("test-node");
        n.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        n
    }

    const L1: [(&str, &str); 2] = [("name", "simple-daemon"), ("type", "production")];

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }

    fn tainted(taints: Vec<Taint>) -> Node {
        let mut n = node(&L1);
        n.taints = taints;
        n
    }

    fn run(ds: &DaemonSetSpec, node: &Node) -> (bool, bool) {
        let e = evaluate(ds, node, &Policy::default());
        assert_eq!(
            e.reason.is_none(),
            e.should_run,
            "reason iff ineligible: {e:?}"
        );
        (e.should_run, e.should_continue_running)
    }

    fn with_affinity(terms: Value) -> DaemonSetSpec {
        ds(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }}}))
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> Value {
        json!({"matchExpressions": [{"key": key, "operator": op, "values": values}]})
    }

    fn tol(t: Value) -> Toleration {
        Toleration::from_k8s(&serde_json::from_value(t).expect("toleration"))
    }

    #[test]
    fn e1_plain_template_runs() {
        let d = ds(json!({"containers": [{"name": "c", "image": "img",
            "resources": {"requests": {"memory": "50M", "cpu": "500m"}}}]}));
        assert_eq!(run(&d, &node(&L1)), (true, true));
    }

    #[test]
    fn e2_resource_requests_are_ignored() {
        let d = ds(json!({"containers": [{"name": "c", "image": "img",
            "resources": {"requests": {"memory": "200M"}}}]}));
        assert_eq!(run(&d, &node(&L1)), (true, true));
    }

    #[test]
    fn nodes_ineligible_for_the_same_reason_share_it_and_others_get_their_own() {
        let d = ds(json!({"nodeSelector": {"type": "production"}}));
        let policy = Policy::default();
        let mut last = None;
        let staging = node(&[("type", "staging")]);
        let a = evaluate_shared(&d, &staging, &policy, &mut last);
        let b = evaluate_shared(&d, &staging, &policy, &mut last);
        let (a, b) = (a.reason.expect("ineligible"), b.reason.expect("ineligible"));
        assert!(std::sync::Arc::ptr_eq(&a, &b), "one reason for one pool");
        let c = evaluate_shared(&d, &node(&[("type", "dev")]), &policy, &mut last);
        assert_eq!(
            c.reason.as_deref().map(ToString::to_string).as_deref(),
            Some("nodeSelector type=production (node has dev)")
        );
        assert!(evaluate_shared(&d, &node(&L1), &policy, &mut last).should_run);
    }

    #[test]
    fn e3_template_node_name_for_another_node_runs_nowhere_else() {
        let d = ds(json!({"nodeName": "other-node"}));
        let e = evaluate(&d, &node(&L1), &Policy::default());
        assert_eq!((e.should_run, e.should_continue_running), (false, false));
        assert_eq!(
            e.reason.as_deref(),
            Some(&Ineligible::NodeName {
                wanted: "other-node".into()
            })
        );
        assert_eq!(
            run(&ds(json!({"nodeName": "test-node"})), &node(&L1)),
            (true, true)
        );
    }

    #[test]
    fn e4_host_ports_are_left_to_the_scheduler() {
        let d = ds(json!({"containers": [{"name": "c", "image": "img",
            "ports": [{"containerPort": 666, "hostPort": 666}]}]}));
        assert_eq!(d.host_ports, vec![666]);
        assert_eq!(run(&d, &node(&L1)), (true, true));
    }

    #[test]
    fn e5_node_selector_must_match_every_key() {
        let l2 = ds(json!({"nodeSelector": {"name": "simple-daemon", "type": "test"}}));
        let e = evaluate(&l2, &node(&L1), &Policy::default());
        assert_eq!((e.should_run, e.should_continue_running), (false, false));
        assert_eq!(
            e.reason.as_deref(),
            Some(&Ineligible::NodeSelector {
                key: "type".into(),
                wanted: "test".into(),
                actual: Some("production".into())
            })
        );
        let l1 = ds(json!({"nodeSelector": {"name": "simple-daemon", "type": "production"}}));
        assert_eq!(run(&l1, &node(&L1)), (true, true));
        let missing = ds(json!({"nodeSelector": {"color": "blue"}}));
        assert_eq!(run(&missing, &node(&L1)), (false, false));
    }

    #[test]
    fn e6_required_node_affinity() {
        let test = with_affinity(json!([expr("type", "In", &["test"])]));
        assert_eq!(run(&test, &node(&L1)), (false, false));
        let production = with_affinity(json!([expr("type", "In", &["production"])]));
        assert_eq!(run(&production, &node(&L1)), (true, true));
    }

    #[test]
    fn e7_unschedulable_field_without_taint_still_runs() {
        let mut n = node(&L1);
        n.unschedulable = true;
        assert_eq!(run(&ds(json!({})), &n), (true, true));
    }

    #[test]
    fn e8_untolerated_noschedule_taint_keeps_running_pods() {
        let n = tainted(vec![taint("dedicated", "user1", TaintEffect::NoSchedule)]);
        let e = evaluate(&ds(json!({})), &n, &Policy::default());
        assert_eq!((e.should_run, e.should_continue_running), (false, true));
        assert_eq!(
            e.reason.as_deref(),
            Some(&Ineligible::Taint {
                taint: taint("dedicated", "user1", TaintEffect::NoSchedule)
            })
        );
    }

    #[test]
    fn e9_untolerated_noexecute_taint_evicts() {
        let n = tainted(vec![taint("dedicated", "user1", TaintEffect::NoExecute)]);
        assert_eq!(run(&ds(json!({})), &n), (false, false));
    }

    #[test]
    fn e10_matching_toleration_runs() {
        let n = tainted(vec![taint("dedicated", "user1", TaintEffect::NoSchedule)]);
        let d = ds(json!({"tolerations": [
            {"key": "dedicated", "value": "user1", "effect": "NoSchedule"}
        ]}));
        assert_eq!(run(&d, &n), (true, true));
    }

    #[test]
    fn prefer_no_schedule_taints_are_ignored() {
        let n = tainted(vec![taint(
            "dedicated",
            "user1",
            TaintEffect::PreferNoSchedule,
        )]);
        assert_eq!(run(&ds(json!({})), &n), (true, true));
    }

    #[test]
    fn noexecute_taint_is_the_reason_when_both_kinds_are_untolerated() {
        let n = tainted(vec![
            taint("a", "", TaintEffect::NoSchedule),
            taint("b", "", TaintEffect::NoExecute),
        ]);
        let e = evaluate(&ds(json!({})), &n, &Policy::default());
        assert_eq!((e.should_run, e.should_continue_running), (false, false));
        assert_eq!(
            e.reason.as_deref(),
            Some(&Ineligible::Taint {
                taint: taint("b", "", TaintEffect::NoExecute)
            })
        );
    }

    #[test]
    fn first_untolerated_noschedule_taint_in_node_order_is_the_reason() {
        let n = tainted(vec![
            taint("z", "", TaintEffect::NoSchedule),
            taint("a", "", TaintEffect::NoSchedule),
        ]);
        let e = evaluate(&ds(json!({})), &n, &Policy::default());
        assert_eq!(
            e.reason.as_deref(),
            Some(&Ineligible::Taint {
                taint: taint("z", "", TaintEffect::NoSchedule)
            })
        );
    }

    #[test]
    fn automatic_tolerations_cover_node_condition_taints() {
        let n = tainted(vec![
            taint("node.kubernetes.io/not-ready", "", TaintEffect::NoExecute),
            taint("node.kubernetes.io/unreachable", "", TaintEffect::NoExecute),
            taint(
                "node.kubernetes.io/disk-pressure",
                "",
                TaintEffect::NoSchedule,
            ),
            taint(
                "node.kubernetes.io/memory-pressure",
                "",
                TaintEffect::NoSchedule,
            ),
            taint(
                "node.kubernetes.io/pid-pressure",
                "",
                TaintEffect::NoSchedule,
            ),
            taint(
                "node.kubernetes.io/unschedulable",
                "",
                TaintEffect::NoSchedule,
            ),
        ]);
        assert_eq!(run(&ds(json!({})), &n), (true, true));
    }

    #[test]
    fn network_unavailable_taint_is_tolerated_only_with_host_network() {
        let n = tainted(vec![taint(
            "node.kubernetes.io/network-unavailable",
            "",
            TaintEffect::NoSchedule,
        )]);
        assert_eq!(run(&ds(json!({})), &n), (false, true));
        assert_eq!(run(&ds(json!({"hostNetwork": true})), &n), (true, true));
    }

    #[test]
    fn affinity_in_and_not_in() {
        let n = node(&[("zone", "a")]);
        let in_ = with_affinity(json!([expr("zone", "In", &["b", "a"])]));
        assert!(run(&in_, &n).0);
        assert!(!run(&in_, &node(&[])).0, "In needs the label");
        let not_in = with_affinity(json!([expr("zone", "NotIn", &["a"])]));
        assert!(!run(&not_in, &n).0);
        assert!(run(&not_in, &node(&[("zone", "b")])).0);
        assert!(run(&not_in, &node(&[])).0, "NotIn matches an absent label");
    }

    #[test]
    fn affinity_exists_and_does_not_exist() {
        let n = node(&[("gpu", "")]);
        let exists =
            with_affinity(json!([{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]));
        assert!(run(&exists, &n).0);
        assert!(!run(&exists, &node(&[])).0);
        let dne = with_affinity(
            json!([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]),
        );
        assert!(!run(&dne, &n).0);
        assert!(run(&dne, &node(&[])).0);
        let exists_with_values = with_affinity(json!([expr("gpu", "Exists", &["x"])]));
        assert!(
            !run(&exists_with_values, &n).0,
            "values make the term invalid"
        );
    }

    #[test]
    fn affinity_gt_and_lt_compare_integers_strictly() {
        let gt = with_affinity(json!([expr("cores", "Gt", &["8"])]));
        assert!(run(&gt, &node(&[("cores", "16")])).0);
        assert!(!run(&gt, &node(&[("cores", "8")])).0);
        assert!(!run(&gt, &node(&[])).0, "label must exist");
        let lt = with_affinity(json!([expr("cores", "Lt", &["8"])]));
        assert!(run(&lt, &node(&[("cores", "4")])).0);
        assert!(!run(&lt, &node(&[("cores", "8")])).0);
    }

    #[test]
    fn affinity_gt_with_non_numeric_label_does_not_match() {
        let gt = with_affinity(json!([expr("cores", "Gt", &["8"])]));
        assert!(!run(&gt, &node(&[("cores", "many")])).0);
        let lt = with_affinity(json!([expr("cores", "Lt", &["8"])]));
        assert!(!run(&lt, &node(&[("cores", "4x")])).0);
    }

    #[test]
    fn affinity_gt_with_bad_value_invalidates_the_term() {
        for values in [&["eight"][..], &["1", "2"], &[], &["-5"]] {
            let terms = compile_required_affinity(
                &serde_json::from_value(json!({"containers": [], "affinity": {"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [expr("cores", "Gt", values)]}}}}))
                .expect("pod spec"),
            )
            .expect("required affinity");
            assert!(terms[0].parse_error().is_some(), "{values:?}");
            assert!(!terms[0].matches(&node(&[("cores", "16")])));
        }
    }

    #[test]
    fn affinity_unknown_operator_or_invalid_key_invalidates_only_that_term() {
        let d = with_affinity(json!([
            expr("zone", "Like", &["a"]),
            expr("bad key!", "In", &["a"]),
            expr("zone", "In", &["bad value!"]),
            expr("zone", "In", &[]),
        ]));
        let n = node(&[("zone", "a")]);
        assert_eq!(run(&d, &n), (false, false));
        let terms = d.required_affinity.as_ref().expect("terms");
        assert!(terms.iter().all(|t| t.parse_error().is_some()));
        let d = with_affinity(json!([
            expr("zone", "Like", &["a"]),
            expr("zone", "In", &["a"])
        ]));
        assert_eq!(run(&d, &n), (true, true));
    }

    #[test]
    fn affinity_match_fields_on_node_name() {
        let n = node(&[]);
        let fields = |op: &str, values: &[&str]| {
            with_affinity(json!([{"matchFields": [
                {"key": "metadata.name", "operator": op, "values": values}]}]))
        };
        assert!(run(&fields("In", &["test-node"]), &n).0);
        assert!(!run(&fields("In", &["other"]), &n).0);
        assert!(!run(&fields("NotIn", &["test-node"]), &n).0);
        assert!(run(&fields("NotIn", &["other"]), &n).0);
        assert!(
            !run(&fields("In", &["test-node", "other"]), &n).0,
            "exactly one value"
        );
        assert!(!run(&fields("Exists", &[]), &n).0, "only In/NotIn");
        let unnamed = Node::default();
        assert!(
            run(&fields("In", &["other"]), &unnamed).0,
            "empty node name ignores fields"
        );
    }

    #[test]
    fn affinity_expressions_and_fields_are_anded() {
        let d = with_affinity(json!([{
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["test-node"]}],
        }]));
        assert!(run(&d, &node(&[("zone", "a")])).0);
        assert!(!run(&d, &node(&[("zone", "b")])).0);
        let mut other = node(&[("zone", "a")]);
        other.name = "other".into();
        assert!(!run(&d, &other).0);
    }

    #[test]
    fn empty_term_list_or_only_empty_terms_run_nowhere() {
        let n = node(&L1);
        assert_eq!(run(&with_affinity(json!([])), &n), (false, false));
        let empty = with_affinity(json!([{}, {"matchExpressions": [], "matchFields": []}]));
        assert_eq!(run(&empty, &n), (false, false));
        assert!(
            empty
                .required_affinity
                .as_ref()
                .expect("terms")
                .iter()
                .all(NodeSelectorTerm::is_empty)
        );
    }

    #[test]
    fn no_required_affinity_matches_every_node() {
        let preferred_only = ds(json!({"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": expr("zone", "In", &["nowhere"])}]
        }}}));
        assert!(preferred_only.required_affinity.is_none());
        assert_eq!(run(&preferred_only, &node(&[])), (true, true));
    }

    #[test]
    fn terms_are_ored_like_gpu_feature_discovery() {
        let d = with_affinity(json!([
            expr(
                "feature.node.kubernetes.io/pci-10de.present",
                "In",
                &["true"]
            ),
            expr(
                "feature.node.kubernetes.io/cpu-model.vendor_id",
                "In",
                &["NVIDIA"]
            ),
            expr("nvidia.com/gpu.present", "In", &["true"]),
        ]));
        assert!(
            run(
                &d,
                &node(&[("feature.node.kubernetes.io/pci-10de.present", "true")])
            )
            .0
        );
        assert!(
            run(
                &d,
                &node(&[("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA")])
            )
            .0
        );
        assert!(run(&d, &node(&[("nvidia.com/gpu.present", "true")])).0);
        let e = evaluate(
            &d,
            &node(&[("nvidia.com/gpu.present", "false")]),
            &Policy::default(),
        );
        assert_eq!(
            e.reason.expect("ineligible").to_string(),
            "no required node-affinity term matches: \
             term 1: feature.node.kubernetes.io/pci-10de.present In [true] \
             (node has no feature.node.kubernetes.io/pci-10de.present label); \
             term 2: feature.node.kubernetes.io/cpu-model.vendor_id In [NVIDIA] \
             (node has no feature.node.kubernetes.io/cpu-model.vendor_id label); \
             term 3: nvidia.com/gpu.present In [true] (node has nvidia.com/gpu.present=false)"
        );
    }

    #[test]
    fn toleration_operators_lt_and_gt_are_gated_by_policy() {
        let on = Policy {
            taint_comparison_operators: true,
            ..Policy::default()
        };
        let off = Policy::default();
        let t = taint("capacity", "5", TaintEffect::NoSchedule);
        let lt = tol(json!({"key": "capacity", "operator": "Lt", "value": "10"}));
        let gt = tol(json!({"key": "capacity", "operator": "Gt", "value": "1"}));
        assert!(tolerates(&lt, &t, &on));
        assert!(tolerates(&gt, &t, &on));
        assert!(!tolerates(&lt, &t, &off));
        assert!(!tolerates(&gt, &t, &off));
        let lt_equal = tol(json!({"key": "capacity", "operator": "Lt", "value": "5"}));
        assert!(!tolerates(&lt_equal, &t, &on), "strict comparison");
        let not_numeric = taint("capacity", "five", TaintEffect::NoSchedule);
        assert!(!tolerates(&lt, &not_numeric, &on));
        let bad_value = tol(json!({"key": "capacity", "operator": "Gt", "value": "1x"}));
        assert!(!tolerates(&bad_value, &t, &on));
    }

    #[test]
    fn key_only_toleration_does_not_tolerate_a_control_plane_taint_with_a_value() {
        let key_only = tol(json!({"key": "node-role.kubernetes.io/control-plane"}));
        let with_value = taint(
            "node-role.kubernetes.io/control-plane",
            "true",
            TaintEffect::NoSchedule,
        );
        let without_value = taint(
            "node-role.kubernetes.io/control-plane",
            "",
            TaintEffect::NoSchedule,
        );
        assert!(!tolerates(&key_only, &with_value, &Policy::default()));
        assert!(tolerates(&key_only, &without_value, &Policy::default()));
    }

    #[test]
    fn toleration_key_effect_and_operator_rules() {
        let p = Policy::default();
        let t = taint("k", "v", TaintEffect::NoExecute);
        assert!(
            tolerates(&tol(json!({"operator": "Exists"})), &t, &p),
            "empty key + Exists tolerates all"
        );
        assert!(tolerates(
            &tol(json!({"key": "k", "operator": "Exists"})),
            &t,
            &p
        ));
        assert!(!tolerates(
            &tol(json!({"key": "other", "operator": "Exists"})),
            &t,
            &p
        ));
        assert!(tolerates(
            &tol(json!({"key": "k", "operator": "Equal", "value": "v", "effect": ""})),
            &t,
            &p
        ));
        assert!(!tolerates(
            &tol(json!({"key": "k", "operator": "Equal", "value": "w"})),
            &t,
            &p
        ));
        assert!(!tolerates(
            &tol(json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"})),
            &t,
            &p
        ));
        assert!(!tolerates(
            &tol(json!({"key": "k", "operator": "Exists", "effect": "Sometimes"})),
            &t,
            &p
        ));
        assert!(!tolerates(
            &tol(json!({"key": "k", "operator": "Matches", "value": "v"})),
            &t,
            &p
        ));
    }

    #[test]
    fn ineligible_display_reads_well_in_a_review() {
        let sel = Ineligible::NodeSelector {
            key: "kubernetes.io/os".into(),
            wanted: "linux".into(),
            actual: Some("windows".into()),
        };
        assert_eq!(
            sel.to_string(),
            "nodeSelector kubernetes.io/os=linux (node has windows)"
        );
        let missing = Ineligible::NodeSelector {
            key: "kubernetes.io/os".into(),
            wanted: "linux".into(),
            actual: None,
        };
        assert_eq!(
            missing.to_string(),
            "nodeSelector kubernetes.io/os=linux (node has no kubernetes.io/os label)"
        );
        let t = Ineligible::Taint {
            taint: taint("nvidia.com/gpu", "present", TaintEffect::NoSchedule),
        };
        assert_eq!(
            t.to_string(),
            "taint nvidia.com/gpu=present:NoSchedule not tolerated"
        );
        let name = Ineligible::NodeName {
            wanted: "node-0".into(),
        };
        assert_eq!(name.to_string(), "nodeName pins the pod to node-0");

        let d = with_affinity(json!([expr("kubernetes.io/os", "In", &["linux"])]));
        let e = evaluate(
            &d,
            &node(&[("kubernetes.io/os", "windows")]),
            &Policy::default(),
        );
        assert_eq!(
            e.reason.expect("ineligible").to_string(),
            "no required node-affinity term matches: kubernetes.io/os In [linux] \
             (node has kubernetes.io/os=windows)"
        );
        let e = evaluate(&with_affinity(json!([])), &node(&[]), &Policy::default());
        assert_eq!(
            e.reason.expect("ineligible").to_string(),
            "no required node-affinity term matches: the term list is empty"
        );
        let d = with_affinity(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]));
        let e = evaluate(&d, &node(&[]), &Policy::default());
        assert_eq!(
            e.reason.expect("ineligible").to_string(),
            "no required node-affinity term matches: metadata.name In [node-1] (node is test-node)"
        );
    }
}
