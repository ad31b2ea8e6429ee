//! Node eligibility (`NodeShouldRunDaemonPod`): nodeName, nodeSelector, required node
//! affinity, taints and tolerations.
//!
//! OWNER: eligibility helper.

/// One compiled required node-affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelectorTerm {}
