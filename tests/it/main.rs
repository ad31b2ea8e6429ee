//! Integration tests: one binary, modules by theme.

mod cli;
mod plan;
mod revision;
mod support;
