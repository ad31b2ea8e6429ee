//! Integration tests: one binary, modules by theme.

mod plan;
mod revision;
mod support;
