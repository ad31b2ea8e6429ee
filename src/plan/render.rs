//! The pod rendered for a node: automatic tolerations, labels and node-affinity injection.
//!
//! OWNER: eligibility helper.
