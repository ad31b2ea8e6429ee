//! daemonsync's revision hash of a defaulted pod template.
//!
//! OWNER: eligibility helper.
