//! Builders for tests, benchmarks and fuzzing (feature `testkit`).

pub mod fixtures;
pub mod plan;
pub mod synthetic;
