//! The plan as JSON: `apiVersion: daemonsync.io/v1alpha1`, `kind: Plan`.
//!
//! The schema is documented in `docs/plan-json.md` and described by `docs/plan.schema.json`;
//! a test checks that real plans conform to it.

use crate::apply::{ApplyReport, Outcome};
use crate::plan::Plan;

/// The plan as pretty-printed JSON with a trailing newline. The same plan always gives the
/// same bytes: fields appear in a fixed order and every list is sorted by the planner.
pub fn to_json(plan: &Plan) -> String {
    let mut out = serde_json::to_string_pretty(plan)
        .expect("a plan has only string keys and finite numbers, so it always serializes");
    out.push('\n');
    out
}

/// An apply's report as pretty-printed JSON (`daemonsync apply -o json`): how it ended, the
/// cluster time it took, every write in order, and the plan of the final state.
pub fn apply_to_json(r: &ApplyReport) -> String {
    fn is_zero(n: &usize) -> bool {
        *n == 0
    }
    /// A DaemonSet and why (blocked, refused).
    #[derive(serde::Serialize)]
    struct Named<'a> {
        daemonset: &'a str,
        why: &'a str,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Report<'a> {
        api_version: &'static str,
        kind: &'static str,
        outcome: &'static str,
        started: crate::model::Timestamp,
        finished: crate::model::Timestamp,
        elapsed_seconds: f64,
        steps: usize,
        creates: usize,
        deletes: usize,
        in_place: usize,
        #[serde(skip_serializing_if = "is_zero")]
        handover_writes: usize,
        halted: &'a [String],
        #[serde(skip_serializing_if = "Vec::is_empty")]
        refused: Vec<Named<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        blocked: Vec<Named<'a>>,
        paused: &'a [String],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        frozen: &'a [String],
        awaiting_promotion: &'a [String],
        writes: &'a [crate::apply::Write],
        plan: &'a Plan,
    }
    let report = Report {
        api_version: crate::plan::PLAN_API_VERSION,
        kind: "ApplyReport",
        outcome: match r.outcome {
            Outcome::Converged => "Converged",
            Outcome::Halted => "Halted",
            Outcome::Paused => "Paused",
            Outcome::AwaitingPromotion => "AwaitingPromotion",
            Outcome::Blocked => "Blocked",
            Outcome::TimedOut => "TimedOut",
            Outcome::Stalled => "Stalled",
            Outcome::Interrupted => "Interrupted",
            Outcome::DryRun => "DryRun",
        },
        started: r.started,
        finished: r.finished,
        elapsed_seconds: r.elapsed().as_secs_f64(),
        steps: r.steps,
        creates: r.creates,
        deletes: r.deletes,
        in_place: r.in_place,
        handover_writes: r.handover_writes,
        halted: &r.halted,
        refused: r
            .refused
            .iter()
            .map(|(daemonset, why)| Named { daemonset, why })
            .collect(),
        blocked: r
            .blocked
            .iter()
            .map(|(daemonset, why)| Named { daemonset, why })
            .collect(),
        paused: &r.paused,
        frozen: &r.frozen,
        awaiting_promotion: &r.awaiting,
        writes: &r.writes,
        plan: &r.plan,
    };
    let mut out = serde_json::to_string_pretty(&report)
        .expect("a report has only string keys and finite numbers, so it always serializes");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::progressive::{Gets, Hold, Paused, StageKind};
    use crate::plan::{DeleteReason, LiveComparison, NodeState, RiskKind, StepPhase};
    use crate::report::testing::known_plan;
    use serde_json::Value;
    use std::collections::BTreeSet;

    const SCHEMA: &str = include_str!("../../docs/plan.schema.json");
    const DOC: &str = include_str!("../../docs/plan-json.md");

    fn schema() -> Value {
        serde_json::from_str(SCHEMA).expect("docs/plan.schema.json is JSON")
    }

    /// A validator for the subset of JSON Schema the plan schema uses: `type`, `const`,
    /// `enum`, `properties`, `required`, `additionalProperties: false`, `items`, `minimum`
    /// and local `$ref`s. Returns every violation with its JSON path.
    fn validate(root: &Value, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let name = r.strip_prefix("#/$defs/").expect("local $ref");
            let def = &root["$defs"][name];
            assert!(def.is_object(), "unknown $ref {r}");
            return validate(root, def, value, path, errors);
        }
        if let Some(c) = schema.get("const")
            && c != value
        {
            errors.push(format!("{path}: {value} is not {c}"));
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            errors.push(format!("{path}: {value} is not one of {options:?}"));
        }
        if let Some(t) = schema.get("type").and_then(Value::as_str) {
            let ok = match t {
                "object" => value.is_object(),
                "array" => value.is_array(),
                "string" => value.is_string(),
                "boolean" => value.is_boolean(),
                "integer" => value.is_i64() || value.is_u64(),
                other => panic!("schema uses unsupported type {other}"),
            };
            if !ok {
                errors.push(format!("{path}: {value} is not of type {t}"));
                return;
            }
        }
        if let (Some(min), Some(n)) = (
            schema.get("minimum").and_then(Value::as_i64),
            value.as_i64(),
        ) && n < min
        {
            errors.push(format!("{path}: {n} is below {min}"));
        }
        if let Some(items) = schema.get("items") {
            for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                validate(root, items, v, &format!("{path}[{i}]"), errors);
            }
        }
        if let Some(obj) = value.as_object() {
            let props = schema.get("properties").and_then(Value::as_object);
            for req in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let req = req.as_str().unwrap();
                if !obj.contains_key(req) {
                    errors.push(format!("{path}: required field `{req}` is missing"));
                }
            }
            for (k, v) in obj {
                match props.and_then(|p| p.get(k)) {
                    Some(s) => validate(root, s, v, &format!("{path}.{k}"), errors),
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        errors.push(format!("{path}: field `{k}` is not in the schema"))
                    }
                    None => {}
                }
            }
        }
    }

    fn violations(value: &Value) -> Vec<String> {
        let root = schema();
        let mut errors = Vec::new();
        validate(&root, &root, value, "$", &mut errors);
        errors
    }

    fn emitted(plan: &Plan) -> Value {
        serde_json::from_str(&to_json(plan)).expect("to_json emits JSON")
    }

    /// A plan exercising every strategy and most node states.
    fn fleet_plan() -> Plan {
        use crate::cluster::synthetic::{fleet, fleet_now};
        let (desired, observed) = fleet(300, 12, 3);
        crate::plan::plan(&desired, &observed, &Default::default(), fleet_now())
    }

    /// Flannel against the seven-node snapshot, which has a live DaemonSet of that name.
    fn live_plan() -> Plan {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let observed =
            crate::cluster::load_snapshot(&root.join("snapshots/seven-nodes.yaml")).unwrap();
        let text = std::fs::read_to_string(root.join("manifests/kube-flannel.yaml")).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        let ds = docs.into_iter().find(|d| d["kind"] == "DaemonSet").unwrap();
        let desired =
            crate::plan::Desired::new("kube-flannel.yaml", serde_json::from_value(ds).unwrap());
        crate::plan::plan(
            &[desired],
            &observed,
            &Default::default(),
            "2025-06-01T12:00:00Z".parse().unwrap(),
        )
    }

    #[test]
    fn live_daemonset_gives_created_and_risks() {
        let v = emitted(&live_plan());
        let ds = &v["daemonsets"][0];
        assert!(ds["created"].is_string(), "{ds}");
        assert_eq!(ds["risks"][0]["kind"], "pods-removed");
        assert_eq!(ds["nodeSelector"], serde_json::json!({}));
    }

    #[test]
    fn json_has_api_version_kind_and_the_status_field_names() {
        let v = emitted(&known_plan());
        assert_eq!(v["apiVersion"], "daemonsync.io/v1alpha1");
        assert_eq!(v["kind"], "Plan");
        assert_eq!(v["now"], "2025-06-01T12:00:00Z");
        let status = &v["daemonsets"][0]["status"];
        let expected = [
            ("desiredNumberScheduled", 5),
            ("currentNumberScheduled", 4),
            ("numberReady", 3),
            ("updatedNumberScheduled", 2),
            ("numberAvailable", 3),
            ("numberUnavailable", 2),
            ("numberMisscheduled", 1),
        ];
        for (field, n) in expected {
            assert_eq!(status[field], n, "{field} in {status}");
        }
        assert_eq!(status.as_object().unwrap().len(), expected.len());
        assert_eq!(v["daemonsets"][0]["step"]["create"][0], "w4");
        assert_eq!(
            v["daemonsets"][0]["step"]["delete"][0]["reason"],
            "misscheduled"
        );
    }

    #[test]
    fn output_is_pretty_deterministic_and_ends_with_a_newline() {
        let a = to_json(&known_plan());
        assert_eq!(a, to_json(&known_plan()));
        assert!(a.starts_with(
            "{\n  \"apiVersion\": \"daemonsync.io/v1alpha1\",\n  \"kind\": \"Plan\",\n"
        ));
        assert!(a.ends_with("}\n") && !a.ends_with("\n\n"));
    }

    #[test]
    fn emitted_plans_conform_to_the_documented_schema() {
        use crate::report::testing as t;
        let manifest_only = t::manifest_only_plan();
        for plan in [
            known_plan(),
            fleet_plan(),
            live_plan(),
            manifest_only,
            t::readiness_plan(),
            t::suspended_plan(),
        ] {
            let errors = violations(&emitted(&plan));
            assert!(errors.is_empty(), "{}", errors.join("\n"));
        }
        // Progressive rollouts: a canary then zones as it starts, at its manual pause with a
        // node getting the stable revision, promoted into its first wave, complete, with a
        // partition and a halt threshold, without a stable revision, and in error.
        let rollouts = [
            t::canary_plan(),
            t::paused_plan(),
            t::wave_plan(),
            t::complete_plan(),
            t::partition_plan(),
            t::no_stable_plan(),
            t::error_plan(),
        ];
        for plan in rollouts {
            let v = emitted(&plan);
            let errors = violations(&v);
            assert!(errors.is_empty(), "{}\n{v:#}", errors.join("\n"));
            // The schema's `pattern` for the phase, which the validator does not check.
            if let Some(phase) = v["daemonsets"][0]["rollout"]["phase"].as_str() {
                let wave = phase
                    .strip_prefix("Wave ")
                    .and_then(|kn| kn.split_once('/'))
                    .is_some_and(|(k, n)| k.parse::<u32>().is_ok() && n.parse::<u32>().is_ok());
                assert!(
                    wave || ["Canary", "Paused", "Halted", "Complete"].contains(&phase),
                    "{phase}"
                );
            }
        }
    }

    /// The rollout fields as a consumer reads them, in a canary-then-zones rollout at its
    /// manual pause after the canary, with node b-5 that joined zone b meanwhile.
    #[test]
    fn a_rollout_in_json() {
        let v = emitted(&crate::report::testing::paused_plan());
        let ds = &v["daemonsets"][0];
        let r = &ds["rollout"];
        assert_eq!(r["phase"], "Paused");
        assert_eq!(
            r["pause"],
            serde_json::json!({"reason": "manual", "after": "canary"})
        );
        let stages: Vec<(&str, &str, usize, Option<&str>)> = r["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["kind"].as_str().unwrap(),
                    s["name"].as_str().unwrap(),
                    s["nodes"].as_array().unwrap().len(),
                    s["pause"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            stages,
            [
                ("canary", "canary", 2, Some("manual")),
                ("wave", "topology.kubernetes.io/zone=b", 5, Some("0")),
                ("wave", "topology.kubernetes.io/zone=a", 2, Some("0")),
                ("wave", "topology.kubernetes.io/zone=c", 4, None),
            ]
        );
        assert_eq!(r["stage"], 0);
        assert!(r["stableRevision"].is_string(), "{r}");
        assert_eq!(r["haltThreshold"], 0);
        assert_eq!(r["progress"]["stage"], 0);
        assert_eq!(r["progress"]["revision"], ds["revision"]);
        assert!(r.get("partition").is_none(), "omitted without a partition");
        assert_eq!(ds["step"]["createStable"], serde_json::json!(["b-5"]));
        let b5 = ds["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == "b-5")
            .unwrap();
        assert_eq!(
            b5["rollout"],
            serde_json::json!({"stage": 1, "hold": "stage", "gets": "stable"})
        );
        let a1 = &ds["nodes"][0];
        assert_eq!(
            a1["rollout"],
            serde_json::json!({"stage": 0, "gets": "new"})
        );
        let wave_stages: Vec<&Value> = ds["waves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| &w["stage"])
            .collect();
        assert!(wave_stages.iter().all(|s| s.is_u64()), "{wave_stages:?}");
        assert!(ds.get("errors").is_none(), "omitted when empty");

        // Without a policy none of these fields appear.
        let plain = emitted(&known_plan());
        let ds = &plain["daemonsets"][0];
        for field in ["rollout", "errors"] {
            assert!(ds.get(field).is_none(), "{field}");
        }
        assert!(ds["step"].get("createStable").is_none());
        assert!(ds["nodes"][0].get("rollout").is_none());
        assert!(ds["waves"][0].get("stage").is_none());

        let err = emitted(&crate::report::testing::error_plan());
        let errors = err["daemonsets"][0]["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1);
        assert!(err["daemonsets"][0].get("rollout").is_none());

        let partition = emitted(&crate::report::testing::partition_plan());
        let r = &partition["daemonsets"][0]["rollout"];
        assert_eq!(
            r["partition"],
            serde_json::json!({"count": "2", "nodes": ["c-3", "c-4"]})
        );
        assert_eq!(r["haltThreshold"], 1);
    }

    #[test]
    fn the_validator_catches_undocumented_missing_and_mistyped_fields() {
        let mut v = emitted(&known_plan());
        v["daemonsets"][0]["extra"] = Value::Bool(true);
        v["daemonsets"][0]["status"]
            .as_object_mut()
            .unwrap()
            .remove("numberReady");
        v["daemonsets"][0]["nodes"][0]["state"] = "sideways".into();
        v["daemonsets"][0]["converges"] = 1.into();
        let errors = violations(&v).join("\n");
        assert!(
            errors.contains("$.daemonsets[0]: field `extra` is not in the schema"),
            "{errors}"
        );
        assert!(
            errors.contains("required field `numberReady` is missing"),
            "{errors}"
        );
        assert!(
            errors.contains("$.daemonsets[0].nodes[0].state: \"sideways\""),
            "{errors}"
        );
        assert!(
            errors.contains("$.daemonsets[0].converges: 1 is not of type boolean"),
            "{errors}"
        );
    }

    /// Every field of the schema has a row in a field table of the doc, and every enumerated
    /// or constant value is mentioned in it.
    #[test]
    fn the_doc_describes_every_schema_field_and_value() {
        fn walk(v: &Value, fields: &mut BTreeSet<String>, values: &mut BTreeSet<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::Object(props)) = m.get("properties") {
                        fields.extend(props.keys().cloned());
                    }
                    let listed = m
                        .get("enum")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten();
                    values.extend(
                        listed
                            .chain(m.get("const"))
                            .map(|e| e.as_str().unwrap().to_string()),
                    );
                    m.values().for_each(|v| walk(v, fields, values));
                }
                Value::Array(a) => a.iter().for_each(|v| walk(v, fields, values)),
                _ => {}
            }
        }
        let (mut fields, mut values) = (BTreeSet::new(), BTreeSet::new());
        walk(&schema(), &mut fields, &mut values);
        assert!(
            fields.len() > 30 && values.len() > 25,
            "{fields:?} {values:?}"
        );
        let missing_rows: Vec<_> = fields
            .iter()
            .filter(|f| !DOC.contains(&format!("\n| `{f}` |")))
            .collect();
        assert!(
            missing_rows.is_empty(),
            "no row in docs/plan-json.md for {missing_rows:?}"
        );
        let unmentioned: Vec<_> = values
            .iter()
            .filter(|v| !DOC.contains(&format!("`{v}`")))
            .collect();
        assert!(
            unmentioned.is_empty(),
            "not in docs/plan-json.md: {unmentioned:?}"
        );
        assert_eq!(crate::plan::PLAN_API_VERSION, "daemonsync.io/v1alpha1");
    }

    fn schema_enum(def: &str, field: &str) -> BTreeSet<String> {
        schema()["$defs"][def]["properties"][field]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{def}.{field} has an enum"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    fn spelled<T: serde::Serialize>(values: &[T]) -> BTreeSet<String> {
        values
            .iter()
            .map(|v| {
                serde_json::to_value(v)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// The schema lists exactly the values the planner can emit. The `match`es below stop
    /// compiling when a variant is added, pointing here.
    #[test]
    fn schema_enumerations_match_the_planner() {
        let states = [
            NodeState::UpToDate,
            NodeState::OutOfDate,
            NodeState::Missing,
            NodeState::Misscheduled,
            NodeState::Duplicate,
            NodeState::Failed,
            NodeState::Unavailable,
            NodeState::Surging,
            NodeState::Terminating,
            NodeState::Blocked,
            NodeState::Ineligible,
        ];
        for s in states {
            match s {
                NodeState::UpToDate
                | NodeState::OutOfDate
                | NodeState::Missing
                | NodeState::Misscheduled
                | NodeState::Duplicate
                | NodeState::Failed
                | NodeState::Unavailable
                | NodeState::Surging
                | NodeState::Terminating
                | NodeState::Blocked
                | NodeState::Ineligible => {}
            }
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(spelled(&states), schema_enum("NodeEntry", "state"));

        let reasons = [
            DeleteReason::Failed,
            DeleteReason::Succeeded,
            DeleteReason::Duplicate,
            DeleteReason::Misscheduled,
            DeleteReason::NodeGone,
            DeleteReason::RollingUpdate,
            DeleteReason::ReplaceUnavailable,
            DeleteReason::Replaced,
            DeleteReason::OldNotReady,
            DeleteReason::NoLongerEligible,
        ];
        for r in reasons {
            match r {
                DeleteReason::Failed
                | DeleteReason::Succeeded
                | DeleteReason::Duplicate
                | DeleteReason::Misscheduled
                | DeleteReason::NodeGone
                | DeleteReason::RollingUpdate
                | DeleteReason::ReplaceUnavailable
                | DeleteReason::Replaced
                | DeleteReason::OldNotReady
                | DeleteReason::NoLongerEligible => {}
            }
        }
        assert_eq!(spelled(&reasons), schema_enum("PodDeletion", "reason"));

        let phases = [StepPhase::None, StepPhase::Manage, StepPhase::RollingUpdate];
        for p in phases {
            match p {
                StepPhase::None | StepPhase::Manage | StepPhase::RollingUpdate => {}
            }
        }
        assert_eq!(spelled(&phases), schema_enum("Step", "phase"));

        let live = [
            LiveComparison::None,
            LiveComparison::Equivalent,
            LiveComparison::Differs,
        ];
        for l in live {
            match l {
                LiveComparison::None | LiveComparison::Equivalent | LiveComparison::Differs => {}
            }
        }
        assert_eq!(spelled(&live), schema_enum("DaemonSetPlan", "live"));

        let kinds = [
            RiskKind::SelectorChange,
            RiskKind::HostPortSurge,
            RiskKind::PodsRemoved,
            RiskKind::AllAtOnce,
            RiskKind::OnDelete,
            RiskKind::NoEligibleNodes,
            RiskKind::BuiltinController,
            RiskKind::PodSecurity,
            RiskKind::RequestsDoNotFit,
        ];
        for k in kinds {
            match k {
                RiskKind::SelectorChange
                | RiskKind::HostPortSurge
                | RiskKind::PodsRemoved
                | RiskKind::AllAtOnce
                | RiskKind::OnDelete
                | RiskKind::NoEligibleNodes
                | RiskKind::BuiltinController
                | RiskKind::PodSecurity
                | RiskKind::RequestsDoNotFit => {}
            }
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(spelled(&kinds), schema_enum("Risk", "kind"));

        let holds = [Hold::Stage, Hold::Partition, Hold::Aborted];
        for h in holds {
            match h {
                Hold::Stage | Hold::Partition | Hold::Aborted => {}
            }
        }
        assert_eq!(spelled(&holds), schema_enum("NodeRollout", "hold"));

        let gets = [Gets::New, Gets::Stable, Gets::Nothing];
        for g in gets {
            match g {
                Gets::New | Gets::Stable | Gets::Nothing => {}
            }
        }
        assert_eq!(spelled(&gets), schema_enum("NodeRollout", "gets"));

        let stage_kinds = [StageKind::Canary, StageKind::Wave];
        for k in stage_kinds {
            match k {
                StageKind::Canary | StageKind::Wave => {}
            }
        }
        assert_eq!(spelled(&stage_kinds), schema_enum("Stage", "kind"));

        let pauses = [
            Paused::Manual {
                after: "canary".into(),
            },
            Paused::Until {
                after: "canary".into(),
                until: "2025-06-01T12:00:00Z".parse().unwrap(),
            },
            Paused::Partition { held: 1 },
            Paused::Record,
            Paused::Frozen,
            Paused::Aborted,
        ];
        let mut reasons = BTreeSet::new();
        for p in &pauses {
            match p {
                Paused::Manual { .. }
                | Paused::Until { .. }
                | Paused::Partition { .. }
                | Paused::Record
                | Paused::Frozen
                | Paused::Aborted => {}
            }
            let v = serde_json::to_value(p).unwrap();
            reasons.insert(v["reason"].as_str().unwrap().to_string());
            // Every field of every variant is in the schema.
            let mut errors = Vec::new();
            let root = schema();
            validate(&root, &root["$defs"]["RolloutPause"], &v, "$", &mut errors);
            assert!(errors.is_empty(), "{}", errors.join("\n"));
        }
        assert_eq!(reasons, schema_enum("RolloutPause", "reason"));
    }
}
