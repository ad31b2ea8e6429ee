//! The revision hash through the real loader: formatting, key order and explicit defaults do
//! not change it; any real change does.

use daemonsync::manifest::{LoadOptions, load_str};
use daemonsync::plan::DaemonSetSpec;

fn revision(yaml: &str) -> String {
    let m = load_str("test.yaml", yaml, &LoadOptions::default()).expect("loads");
    assert!(
        m.invalid.is_empty(),
        "{:?}",
        m.invalid.first().map(|i| &i.errors)
    );
    DaemonSetSpec::compile(&m.daemonsets[0].daemonset).revision
}

const BASE: &str = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ops}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: agent
        image: registry.example/agent:1.4.2
        ports: [{containerPort: 9100}]
"#;

#[test]
fn reordering_and_reformatting_keep_the_revision() {
    let reordered = r#"
kind: DaemonSet
apiVersion: apps/v1
spec:
  template:
    spec:
      containers:
        - ports:
            - containerPort: 9100
          image: "registry.example/agent:1.4.2"
          name: agent
    metadata:
      labels:
        app: agent
  selector:
    matchLabels: {app: agent}
metadata:
  namespace: ops
  name: agent
"#;
    assert_eq!(revision(BASE), revision(reordered));
}

#[test]
fn explicit_defaults_keep_the_revision() {
    let explicit = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ops}
spec:
  selector: {matchLabels: {app: agent}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1, maxSurge: 0}}
  revisionHistoryLimit: 10
  template:
    metadata: {labels: {app: agent}}
    spec:
      restartPolicy: Always
      dnsPolicy: ClusterFirst
      schedulerName: default-scheduler
      terminationGracePeriodSeconds: 30
      securityContext: {}
      containers:
      - name: agent
        image: registry.example/agent:1.4.2
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
        ports: [{containerPort: 9100, protocol: TCP}]
"#;
    assert_eq!(revision(BASE), revision(explicit));
}

#[test]
fn real_changes_change_the_revision() {
    let base = revision(BASE);
    for (what, changed) in [
        ("image", BASE.replace("agent:1.4.2", "agent:1.4.3")),
        ("port", BASE.replace("9100", "9101")),
        (
            "label",
            BASE.replace("labels: {app: agent}", "labels: {app: agent, tier: node}"),
        ),
        (
            "pull policy",
            BASE.replace(
                "        ports:",
                "        imagePullPolicy: Always\n        ports:",
            ),
        ),
    ] {
        assert_ne!(base, revision(&changed), "{what} must change the revision");
    }
    // The update strategy is not part of the template.
    let strategy = BASE.replace(
        "spec:\n  selector",
        "spec:\n  updateStrategy: {type: OnDelete}\n  selector",
    );
    assert_eq!(base, revision(&strategy));
}
