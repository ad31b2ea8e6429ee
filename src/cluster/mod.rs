//! Observed cluster state.
