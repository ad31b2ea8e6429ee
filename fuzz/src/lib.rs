//! What the fuzz targets share: a DaemonSet to plan and roll out, loaded through the real
//! loader so it is defaulted and validated like any manifest.

use daemonsync::manifest::{LoadOptions, load_str};
use daemonsync::plan::Desired;

/// A DaemonSet with a rolling update of `max_unavailable` (an integer or a percentage).
pub fn agent(max_unavailable: &str) -> Vec<Desired> {
    let text = format!(
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: kube-system}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  updateStrategy: {{rollingUpdate: {{maxUnavailable: {max_unavailable}}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers:
      - {{name: agent, image: 'agent:2'}}
"
    );
    let manifests = load_str("agent.yaml", &text, &LoadOptions::default()).expect("agent.yaml");
    assert_eq!(manifests.daemonsets.len(), 1, "agent.yaml is valid");
    manifests
        .daemonsets
        .into_iter()
        .map(|m| Desired {
            source: m.source.to_string(),
            daemonset: m.daemonset,
            config: m.config,
        })
        .collect()
}
