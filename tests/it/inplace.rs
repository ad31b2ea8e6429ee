//! Fast, safe image bumps on the simulated fleet of examples/sim/pulls.yaml (30 s pulls):
//! the same image bump recreated, updated in place, and updated in place with its images
//! pulled ahead, read from the `apply -o json` report; and a misspelt image that pre-pull
//! catches before any daemon pod is touched.

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn apply(manifests: &str) -> (i32, Value, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(assert_cmd::cargo::cargo_bin!("daemonsync"))
        .args(["apply", "--manifests"])
        .arg(root.join("examples/inplace").join(manifests))
        .arg("--cluster")
        .arg(format!(
            "sim:{}",
            root.join("examples/sim/pulls.yaml").display()
        ))
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the JSON report ({e}); stderr: {stderr}"));
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn verbs(report: &Value) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for w in report["writes"].as_array().unwrap() {
        *counts
            .entry(w["verb"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

fn seconds(report: &Value) -> f64 {
    report["elapsedSeconds"].as_f64().unwrap()
}

#[test]
fn in_place_with_pre_pull_takes_at_most_half_the_time_of_a_recreate() {
    let (code, recreate, err) = apply("recreate");
    assert_eq!(code, 0, "{err}");
    assert_eq!(verbs(&recreate)["create"], 40);
    let (code, in_place, err) = apply("in-place");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        verbs(&in_place),
        BTreeMap::from([("in-place".to_string(), 40)])
    );
    let (code, pre_pulled, err) = apply("in-place-pre-pull");
    assert_eq!(code, 0, "{err}");
    let v = verbs(&pre_pulled);
    assert_eq!(v["in-place"], 40);
    assert!(
        !v.contains_key("create") && !v.contains_key("delete"),
        "no daemon pod created or deleted: {v:?}"
    );
    assert_eq!(
        v["pre-pull"], v["pre-pull-cleanup"],
        "every pre-pull pod is removed"
    );
    let (r, i, p) = (seconds(&recreate), seconds(&in_place), seconds(&pre_pulled));
    assert!(i < r, "in place {i}s, recreate {r}s");
    assert!(p <= r / 2.0, "in place with pre-pull {p}s, recreate {r}s");
    // Every pod kept its name: the write log names the same 40 pods as the final plan.
    assert_eq!(
        pre_pulled["plan"]["daemonsets"][0]["status"]["updatedNumberScheduled"],
        40
    );
}

#[test]
fn a_misspelt_image_is_caught_by_pre_pull_with_no_node_unavailable() {
    let (code, report, err) = apply("typo");
    assert_eq!(code, 3, "{err}");
    assert_eq!(report["outcome"], "Halted");
    let v = verbs(&report);
    assert_eq!(v.keys().collect::<Vec<_>>(), ["pre-pull"], "{v:?}");
    let status = &report["plan"]["daemonsets"][0]["status"];
    assert_eq!(status["numberUnavailable"], 0);
    assert_eq!(status["numberAvailable"], 40);
    assert!(
        err.contains("registry.example/agnet:1.4.2") && err.contains("ErrImagePull"),
        "{err}"
    );
    assert!(err.contains("no daemon pod was touched"), "{err}");
    assert!(
        err.contains("node node-01 "),
        "the failing nodes are named: {err}"
    );
}
