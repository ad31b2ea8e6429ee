//! `daemonsync render`: the DaemonSets as daemonsync sees them (validated and defaulted), or
//! the pod one of them would create on a given node.

use super::source::{LoadArgs, for_cluster, load_desired_paths};
use crate::cluster::ClusterSpec;
use crate::manifest::LoadOptions;
use crate::model::KubeVersion;
use crate::plan::eligibility;
use crate::plan::render::{PodOwner, pod_for_node};
use crate::plan::{DaemonSetSpec, Desired, Policy};
use anyhow::{Context as _, Result, bail};
use std::io::Write;
use std::path::PathBuf;

pub(crate) const RENDER_HELP: &str = "\
Examples:
  # The DaemonSets in ./deploy after validation and defaulting, as YAML
  daemonsync render --manifests ./deploy

  # The pod each DaemonSet would create on node worker-1
  daemonsync render --manifests ./deploy --node worker-1

  # The same, checked against a cluster snapshot (the node must exist; a note on stderr says
  # when it does not qualify for a DaemonSet)
  daemonsync render -m ./deploy --node worker-1 --cluster snapshot:cluster.yaml

  # What the API server would keep of DaemonSets with fields their schema lacks (each is
  # named on stderr and dropped; without --validate=warn they are refused)
  daemonsync render -m ./deploy --validate=warn

  # The DaemonSets of a Kustomize overlay or a Helm chart, rendered (kustomize, or kubectl
  # kustomize, or helm template) for Kubernetes 1.34
  daemonsync render -m examples/kustomize/overlays/prod --kube-version 1.34
  daemonsync render -m examples/helm/node-agent --values examples/helm/values-prod.yaml

Exit status:
  0  rendered
  1  error (bad manifests, an unknown field with --validate=strict, unknown node or
     DaemonSet, unreadable snapshot)";

/// Flags of `daemonsync render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// Manifest files or directories (*.yaml, *.yml, *.json, searched recursively).
    #[arg(long, short = 'm', required = true, num_args = 1.., value_name = "PATH")]
    pub manifests: Vec<PathBuf>,
    /// Render the pod that would be created on this node instead of the DaemonSets.
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Check `--node` against the observed state: `snapshot:FILE`.
    #[arg(long, short = 'c', value_name = "SOURCE", requires = "node")]
    pub cluster: Option<ClusterSpec>,
    /// Only this DaemonSet (`NAME` or `NAMESPACE/NAME`).
    #[arg(long, short = 'd', value_name = "NAME")]
    pub daemonset: Option<String>,
    /// How the manifests are read.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `daemonsync render` as its flags say, converted once.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Manifest files or directories.
    pub manifests: Vec<PathBuf>,
    /// How they are read (for `--kube-version`, or v1.35 until the cluster says).
    pub load: LoadOptions,
    /// `--kube-version`: read them for it instead of `cluster`'s version.
    pub kube_version: Option<KubeVersion>,
    /// How overlays and charts among them are rendered.
    pub render: crate::source::RenderOptions,
    /// Render the pod for this node instead of the DaemonSets.
    pub node: Option<String>,
    /// Where `node` is checked: a snapshot (or any cluster).
    pub cluster: Option<ClusterSpec>,
    /// Only this DaemonSet (`NAME` or `NAMESPACE/NAME`).
    pub daemonset: Option<String>,
}

impl RenderArgs {
    /// Validates the flags into [`RenderOptions`], before anything is read.
    pub fn options(&self) -> Result<RenderOptions> {
        if let Some(node) = &self.node
            && node.trim().is_empty()
        {
            bail!("--node must name a node");
        }
        Ok(RenderOptions {
            manifests: self.manifests.clone(),
            load: self.load.load_options(),
            kube_version: self.load.kube_version,
            render: self.load.render_options(),
            node: self.node.clone(),
            cluster: self.cluster.clone(),
            daemonset: self.daemonset.clone(),
        })
    }
}

/// Runs `daemonsync render`; returns the exit code.
pub async fn run(args: &RenderArgs) -> Result<i32> {
    execute(&args.options()?).await
}

/// Renders as `opts` say to stdout; returns the exit code.
pub async fn execute(opts: &RenderOptions) -> Result<i32> {
    let mut load = opts.load.clone();
    let reported = match (&opts.cluster, opts.kube_version) {
        (Some(cluster), None) => cluster.version().await?,
        _ => None,
    };
    for_cluster(&mut load, opts.kube_version, reported)?;
    let mut desired = load_desired_paths(&opts.manifests, &load, &opts.render)?;
    if let Some(want) = &opts.daemonset {
        desired.retain(|d| matches_name(d, want));
        if desired.is_empty() {
            bail!("no DaemonSet named {want:?} in the manifests");
        }
    }
    let docs: Vec<serde_json::Value> = match &opts.node {
        None => desired
            .iter()
            .map(|d| serde_json::to_value(&d.daemonset))
            .collect::<Result<_, _>>()?,
        Some(node) => pods(&desired, node, opts.cluster.as_ref()).await?,
    };
    let yaml = serde_saphyr::to_string_multiple(&docs).context("cannot write YAML")?;
    let mut out = std::io::stdout().lock();
    out.write_all(yaml.as_bytes())?;
    out.flush()?;
    Ok(super::EXIT_OK)
}

fn matches_name(d: &Desired, want: &str) -> bool {
    let meta = &d.daemonset.metadata;
    let name = meta.name.as_deref().unwrap_or_default();
    match want.split_once('/') {
        Some((ns, n)) => meta.namespace.as_deref().unwrap_or("default") == ns && name == n,
        None => name == want,
    }
}

/// The pod of every desired DaemonSet for `node`, as daemonsync would create it.
async fn pods(
    desired: &[Desired],
    node: &str,
    source: Option<&ClusterSpec>,
) -> Result<Vec<serde_json::Value>> {
    let observed = match source {
        Some(cluster) => Some(cluster.observe().await?),
        None => None,
    };
    let known = match &observed {
        None => None,
        Some(o) => match o.nodes.iter().find(|n| n.name == node) {
            Some(n) => Some(n),
            None => {
                let mut names: Vec<&str> = o.nodes.iter().map(|n| n.name.as_str()).collect();
                names.sort_unstable();
                let more = names.len().saturating_sub(10);
                names.truncate(10);
                bail!(
                    "node {node:?} is not in the snapshot; its nodes are: {}{}",
                    names.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                );
            }
        },
    };
    let mut docs = Vec::new();
    for d in desired {
        let spec = DaemonSetSpec::compile(&d.daemonset);
        if let Some(n) = known {
            let e = eligibility::evaluate(&spec, n, &Policy::default());
            if let Some(why) = &e.reason {
                eprintln!(
                    "note: {}/{} would not run a pod on {node}: {why}",
                    spec.namespace, spec.name
                );
            }
        }
        let owner = PodOwner::record(&spec.name);
        let pod = pod_for_node(&d.daemonset, &spec, node, &owner);
        docs.push(serde_json::to_value(&pod)?);
    }
    Ok(docs)
}
