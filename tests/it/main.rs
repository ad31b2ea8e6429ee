//! Integration tests, one binary with modules by theme: the command line, git sources against
//! real repositories built in temporary directories (a local path, a `file://` URL and
//! `git daemon` on 127.0.0.1), directory sources, the planner end to end, and `plan --github`
//! against a stand-in for GitHub's REST API.

mod action;
mod action_yml;
mod capacity;
mod cli;
mod config;
mod dir;
mod examples;
mod fake_github;
mod git;
mod handover_live;
mod hardening_inputs;
mod hardening_sources;
mod inplace;
mod layers;
mod live;
mod live_budget;
mod plan;
mod progressive;
mod rbac;
mod render;
mod revision;
mod rollout_cli;
mod serve_cluster;
mod serve_http;
mod serve_inplace;
mod serve_kube;
mod serve_kubectl;
mod serve_support;
mod signals_live;
mod snapshot_reader;
mod source_cli;
mod support;
mod sync_e2e;
mod sync_ha;
mod sync_soak;
mod sync_support;
