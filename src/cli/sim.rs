//! `daemonsync sim serve`: the simulated cluster as a Kubernetes API server on 127.0.0.1.

use crate::cluster::sim::serve::{self, Faults, ServeOptions};
use anyhow::Result;
use std::net::SocketAddr;
use std::path::PathBuf;

pub(crate) const SERVE_HELP: &str = "\
Examples:
  # Serve the demo fleet, then point kubectl at it
  daemonsync sim serve --config examples/sim/demo.yaml
  export KUBECONFIG=$PWD/sim.kubeconfig
  kubectl get nodes

  # Roll the example manifests out through the API
  daemonsync apply --manifests examples/manifests --cluster kube

  # Inject API failures for client tests
  daemonsync sim serve --config examples/sim/demo.yaml --faults error-rate=0.05,latency=20ms,watch-drop=5s

  # Log every API request (RBAC verb, resource, User-Agent, status) as JSON lines
  daemonsync sim serve --config examples/sim/demo.yaml --request-log requests.jsonl

When ready it prints one line: `serving the simulated cluster at URL; kubeconfig: FILE`.
It serves until SIGINT or SIGTERM, then exits 0. See docs/sim-serve.md.";

/// Flags of `daemonsync sim`.
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    /// What to do with the simulated cluster.
    #[command(subcommand)]
    pub command: SimCommand,
}

/// Subcommands of `daemonsync sim`.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Serve a simulated cluster (docs/sim.md) as a Kubernetes API server on 127.0.0.1, for
    /// kubectl and `--cluster kube`.
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
}

/// Flags of `daemonsync sim serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The sim file (docs/sim.md).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Address to listen on (port 0: a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write a kubeconfig for the server (context `daemonsync-sim`).
    #[arg(long, value_name = "FILE", default_value = "./sim.kubeconfig")]
    pub kubeconfig: PathBuf,
    /// Injected API failures, e.g. `error-rate=0.05,latency=20ms,watch-drop=5s`;
    /// `forbid=create:pods` answers those requests 403.
    #[arg(long, value_name = "SPEC")]
    pub faults: Option<Faults>,
    /// Log every API request to FILE, one JSON line each: RBAC verb, group, resource,
    /// subresource, namespace, User-Agent and status code (docs/sim-serve.md).
    #[arg(long, value_name = "FILE")]
    pub request_log: Option<PathBuf>,
}

impl ServeArgs {
    /// The library options these flags stand for.
    pub fn options(&self) -> ServeOptions {
        ServeOptions {
            listen: self.listen,
            kubeconfig: Some(self.kubeconfig.clone()),
            faults: self.faults.clone().unwrap_or_default(),
            request_log: self.request_log.clone(),
            ..ServeOptions::new(&self.config)
        }
    }
}

/// Runs `daemonsync sim ...`; returns the exit code.
pub async fn run(args: &SimArgs) -> Result<i32> {
    match &args.command {
        SimCommand::Serve(a) => {
            serve::serve_until_signal(a.options()).await?;
            Ok(super::EXIT_OK)
        }
    }
}
