//! `daemonsync release NAMESPACE/NAME`: give a managed DaemonSet back to the built-in
//! DaemonSet controller with no pod restarted ([`crate::apply::release`] does the work).

use super::rollout::{check_name, live_cluster_context};
use crate::apply::{ReleaseError, ReleaseOptions, Released, Write, release};
use crate::cluster::ClusterSpec;
use crate::cluster::kube::{KubeCluster, KubeOptions, adoption_selectors};
use crate::plan::Desired;
use anyhow::{Result, anyhow, bail};
use jiff::SignedDuration;

pub(crate) const RELEASE_HELP: &str = "\
Examples:
  # Hand demo/agent back to the built-in DaemonSet controller
  daemonsync release demo/agent

  # The same in another kubeconfig context
  daemonsync release demo/agent --cluster kube:prod-eu

What it does, each step conditional on what it saw (a release killed at any point is finished
by running it again):
  1. freezes the ManagedDaemonSet record: a running `daemonsync sync` writes nothing for it;
  2. releases the record's pods (they keep running) and creates the apps/v1 DaemonSet from
     the record under updateStrategy OnDelete, so the built-in controller adopts the pods
     and replaces none;
  3. relabels the pods with the controller-revision-hash of the DaemonSet's ControllerRevision;
  4. sets the DaemonSet's own update strategy and deletes the record with orphan propagation.
Afterwards `kubectl rollout status daemonset/NAME -n NAMESPACE` reports the rollout complete.

A DaemonSet still in a daemonsync source is then blocked (nothing is written for it) unless
its manifest says daemonsync.io/adopt: \"true\", which takes it over again: remove it from the
source, or remove that annotation, before `sync` runs on it.

Exit status:
  0  released: the built-in controller runs every pod
  1  error (no such record, not a live cluster, the timeout passed: run it again)";

/// Flags of `daemonsync release`.
#[derive(Debug, clap::Args)]
pub struct ReleaseArgs {
    /// The DaemonSet: `NAMESPACE/NAME` (or `NAME` with --namespace), the name of its
    /// ManagedDaemonSet record (`kubectl get mds -A` lists them).
    #[arg(value_name = "NAMESPACE/NAME")]
    pub target: String,
    /// The namespace, when the target is a bare NAME; defaults to the kubeconfig context's
    /// namespace, or `default`.
    #[arg(long, short = 'n', value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// The live cluster: `kube` (the current kubeconfig context, or the in-cluster config;
    /// the default) or `kube:CONTEXT`.
    #[arg(long, short = 'c', value_name = "CLUSTER", default_value = "kube")]
    pub cluster: ClusterSpec,
    /// Give up after this long (e.g. 5m, 90s); running the command again continues.
    #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = crate::manifest::duration::parse)]
    pub timeout: SignedDuration,
}

/// `daemonsync release` as its flags say, converted and checked once.
#[derive(Debug, Clone)]
pub struct ReleaseCommandOptions {
    /// The record's name.
    pub name: String,
    /// Its namespace; `None`: the kubeconfig context's.
    pub namespace: Option<String>,
    /// The live cluster's kubeconfig context.
    pub context: Option<String>,
    /// How the hand-back runs.
    pub release: ReleaseOptions,
}

impl ReleaseArgs {
    /// Validates the flags into [`ReleaseCommandOptions`]: a live cluster, one namespace, and
    /// names the API server could hold.
    pub fn options(&self) -> Result<ReleaseCommandOptions> {
        let context = live_cluster_context(
            "release",
            "ManagedDaemonSet",
            &self.cluster,
            "serve it with `daemonsync sim serve` and use --cluster kube against it",
        )?;
        let (namespace, name) = match self.target.split_once('/') {
            Some((ns, name)) => {
                if self.namespace.as_deref().is_some_and(|n| n != ns) {
                    bail!(
                        "{} names namespace {ns}, --namespace says {}: give one of them",
                        self.target,
                        self.namespace.as_deref().unwrap_or_default()
                    );
                }
                (Some(ns.to_string()), name.to_string())
            }
            None => (self.namespace.clone(), self.target.clone()),
        };
        check_name("NAME", &name, 253)?;
        if let Some(ns) = &namespace {
            check_name("namespace", ns, 63)?;
        }
        Ok(ReleaseCommandOptions {
            name,
            namespace,
            context,
            release: ReleaseOptions {
                timeout: self.timeout,
                ..ReleaseOptions::default()
            },
        })
    }
}

/// Runs `daemonsync release`; returns the exit code.
pub async fn run(args: &ReleaseArgs) -> Result<i32> {
    execute(&args.options()?).await
}

/// Hands the DaemonSet back as `opts` say and prints each write; returns the exit code.
pub async fn execute(opts: &ReleaseCommandOptions) -> Result<i32> {
    let name = opts.name.clone();
    let options = KubeOptions {
        context: opts.context.clone(),
        ..KubeOptions::default()
    };
    let mut cluster = KubeCluster::connect(options).await?;
    let namespace = opts
        .namespace
        .clone()
        .unwrap_or_else(|| cluster.client().default_namespace().to_string());
    let key = format!("{namespace}/{name}");
    // The record's pods, wherever their controller goes, and the built-in controller's.
    if let Some(ds) = cluster.managed_daemonsets().into_iter().find(|d| {
        d.metadata.namespace.as_deref() == Some(namespace.as_str())
            && d.metadata.name.as_deref() == Some(name.as_str())
    }) {
        let desired = Desired::new("", ds);
        cluster
            .watch_pods(&adoption_selectors(std::slice::from_ref(&desired)))
            .await?;
    }
    eprintln!(
        "releasing {key} to the built-in DaemonSet controller in {}",
        cluster.target()
    );
    let released = match release(&mut cluster, &namespace, &name, &opts.release).await {
        Ok(released) => released,
        Err(ReleaseError::Cluster(e)) => return Err(anyhow!("releasing {key}: {e}")),
        Err(e) => return Err(anyhow!(e)),
    };
    println!("{}", summary(&key, &namespace, &name, &released).join("\n"));
    Ok(super::EXIT_OK)
}

/// One line per write, then what the cluster runs now and what to do next.
fn summary(key: &str, namespace: &str, name: &str, released: &Released) -> Vec<String> {
    let mut lines: Vec<String> = released.writes.iter().map(line).collect();
    if released.writes.is_empty() {
        lines.push(format!(
            "{key} is run by the built-in DaemonSet controller already: nothing to do"
        ));
    }
    lines.push(format!(
        "released {key}: the built-in DaemonSet controller runs its {} pod(s), none restarted; \
         updateStrategy {}",
        released.pods.len(),
        released.strategy
    ));
    lines.push(format!(
        "  kubectl rollout status daemonset/{name} -n {namespace}"
    ));
    lines.push(format!(
        "if {key} is still in a daemonsync source, remove it (or its daemonsync.io/adopt \
         annotation): with adopt, sync takes it over again; without, it is blocked"
    ));
    lines
}

fn line(w: &Write) -> String {
    match w.verb {
        "freeze" => format!(
            "froze {}: a running sync writes nothing for it",
            w.daemonset
        ),
        "release" => format!("released pod {} (it keeps running)", w.pod),
        "apply" if w.phase == "Release" => {
            format!("set the update strategy of DaemonSet {}", w.daemonset)
        }
        "apply" => format!(
            "applied DaemonSet {} under OnDelete: the built-in controller adopts the pods",
            w.daemonset
        ),
        "relabel" => format!(
            "relabelled pod {} with controller-revision-hash={}",
            w.pod, w.revision
        ),
        "delete-record" => format!(
            "deleted ManagedDaemonSet {} (orphan propagation: its pods stay)",
            w.daemonset
        ),
        verb => format!("{verb} {} {}", w.daemonset, w.pod),
    }
}
