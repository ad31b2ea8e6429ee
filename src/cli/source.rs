//! The flags that say where manifests come from, shared by `plan` and `apply`: files and
//! directories, or a git repository at a ref; and how they are read ([`LoadArgs`]: namespace,
//! `--validate`, the target Kubernetes version and how overlays and charts are rendered),
//! shared by every command that reads manifests. They become a [`ManifestSource`] (with its
//! [`RenderOptions`]) and [`LoadOptions`] once, here.

use crate::cluster::TargetVersion;
use crate::manifest::{FieldValidation, Gates, LoadOptions, Manifests};
use crate::model::KubeVersion;
use crate::plan::Desired;
use crate::source::git::default_cache_dir;
use crate::source::{
    GitAuth, GitSource, LocalSource, ManifestSource, RenderMode, RenderOptions, Rendered, Source,
};
use anyhow::Result;
use std::path::PathBuf;

/// Flags that say where the manifests come from.
#[derive(Debug, clap::Args)]
pub struct SourceArgs {
    /// Manifest files or directories (*.yaml, *.yml, *.json, searched recursively).
    #[arg(
        long,
        short = 'm',
        num_args = 1..,
        value_name = "PATH",
        required_unless_present = "repo",
        conflicts_with = "repo"
    )]
    pub manifests: Vec<PathBuf>,
    /// A git repository: a URL (https://, ssh://, git://, file://, user@host:path), mirrored in
    /// --cache-dir and fetched, or a local path opened directly. Files are read from the
    /// commit's tree, never from a checkout.
    #[arg(long, value_name = "URL|PATH")]
    pub repo: Option<String>,
    /// The ref to read: a branch, a tag or a commit id (default HEAD).
    #[arg(long = "ref", value_name = "REF", requires = "repo")]
    pub reference: Option<String>,
    /// Directory (or file) inside the repository holding the manifests. Relative; no '..'.
    #[arg(long, value_name = "SUBDIR", requires = "repo")]
    pub path: Option<String>,
    /// Where remote repositories are mirrored (bare repositories, fetched, never re-cloned).
    /// Default: the user cache directory, e.g. ~/.cache/daemonsync.
    #[arg(long, value_name = "DIR", env = "DAEMONSYNC_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// SSH private key for ssh:// repositories (default: the SSH agent). HTTPS tokens are read
    /// from the DAEMONSYNC_GIT_TOKEN environment variable only, never from a flag.
    #[arg(long, value_name = "FILE", env = "DAEMONSYNC_SSH_KEY")]
    pub ssh_key: Option<PathBuf>,
    /// known_hosts file used to verify SSH host keys (default ~/.ssh/known_hosts).
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Option<PathBuf>,
    /// Connect and read timeout of git network operations (e.g. 30s, 2m): a server that
    /// accepts the connection and never answers fails the fetch after this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub git_timeout: std::time::Duration,
    /// How the manifests are read.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `--validate`: kubectl's field validation levels, for fields a DaemonSet's schema does not
/// have (a typo, a key at the wrong indentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ValidateMode {
    /// Each unknown field is an error naming its path; nothing is planned (`true` is the same).
    #[value(alias = "true")]
    Strict,
    /// Each unknown field is a warning (stderr, and the plan's warnings); it is dropped, as
    /// the API server drops it.
    Warn,
    /// Unknown fields are dropped silently (`false` is the same).
    #[value(alias = "false")]
    Ignore,
}

impl From<ValidateMode> for FieldValidation {
    fn from(mode: ValidateMode) -> Self {
        match mode {
            ValidateMode::Strict => FieldValidation::Strict,
            ValidateMode::Warn => FieldValidation::Warn,
            ValidateMode::Ignore => FieldValidation::Ignore,
        }
    }
}

/// `--render`: how a directory is turned into manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderArg {
    /// Kustomize for a directory holding kustomization.yaml (.yml, Kustomization), Helm for
    /// one holding Chart.yaml, the files as they are otherwise.
    Auto,
    /// The files as they are.
    None,
    /// `kustomize build` (or `kubectl kustomize`).
    Kustomize,
    /// `helm template`.
    Helm,
}

impl From<RenderArg> for RenderMode {
    fn from(arg: RenderArg) -> Self {
        match arg {
            RenderArg::Auto => RenderMode::Auto,
            RenderArg::None => RenderMode::None,
            RenderArg::Kustomize => RenderMode::Kustomize,
            RenderArg::Helm => RenderMode::Helm,
        }
    }
}

/// How manifests are read, for every command that reads them (`plan`, `apply`, `render`,
/// `status`, `sync`).
#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// Namespace for manifests that name none (as kubectl does).
    #[arg(
        long,
        short = 'n',
        default_value = "default",
        env = "DAEMONSYNC_NAMESPACE"
    )]
    pub namespace: String,
    /// How fields the DaemonSet schema does not have (a typo, a key at the wrong indentation)
    /// are treated, as by kubectl's --validate; other kinds are not checked. `--validate`
    /// alone means strict.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        default_value_t = ValidateMode::Strict,
        num_args = 0..=1,
        default_missing_value = "strict"
    )]
    pub validate: ValidateMode,
    /// The Kubernetes version to render (helm template --kube-version) and validate for,
    /// 1.31 to 1.35. Default: the cluster's (a live cluster's /version, the version a
    /// snapshot records or its newest kubelet's, a sim file's version:), else 1.35.
    #[arg(long, value_name = "X.Y", value_parser = parse_kube_version)]
    pub kube_version: Option<KubeVersion>,
    /// How a directory is turned into manifests: `auto` renders a Kustomize overlay
    /// (kustomization.yaml) or a Helm chart (Chart.yaml) and reads any other directory as it
    /// is; `none` reads the files as they are.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RenderArg::Auto)]
    pub render: RenderArg,
    /// A Helm values file (repeatable, applied in order): with --repo relative to the
    /// repository root, with --manifests to the working directory; it must stay inside.
    #[arg(long = "values", value_name = "FILE")]
    pub values: Vec<String>,
    /// The Helm release name (default: the chart's name).
    #[arg(long, value_name = "NAME")]
    pub release: Option<String>,
    /// How long a renderer (kustomize, kubectl kustomize, helm) may run before it is killed
    /// with every process it started (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub render_timeout: std::time::Duration,
    /// Let kustomize fetch remote bases and resources (URLs, git::, github.com/...) and
    /// helmCharts that are not vendored. Refused by default: a plan must not fetch from the
    /// network on a pull request's say-so.
    #[arg(long)]
    pub allow_remote_bases: bool,
    /// Pass a kustomization's helmCharts: through (kustomize --enable-helm; helm must be on
    /// PATH and the charts vendored unless --allow-remote-bases).
    #[arg(long)]
    pub enable_helm: bool,
}

impl LoadArgs {
    /// Loader options from the flags, for `--kube-version` or, without it, v1.35 until the
    /// cluster's version is known ([`for_cluster`]).
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            default_namespace: self.namespace.clone(),
            field_validation: self.validate.into(),
            gates: Gates::for_version(self.kube_version.unwrap_or_default()),
            ..LoadOptions::default()
        }
    }

    /// How overlays and charts are rendered.
    pub fn render_options(&self) -> RenderOptions {
        RenderOptions {
            mode: self.render.into(),
            values: self.values.clone(),
            release: self.release.clone(),
            timeout: self.render_timeout,
            allow_remote_bases: self.allow_remote_bases,
            enable_helm: self.enable_helm,
            ..RenderOptions::default()
        }
    }
}

/// `load` for the Kubernetes version `--kube-version` names, else the cluster's
/// (`reported`), else v1.35; prints a note when the cluster's is newer than daemonsync
/// knows. Returns the target, for the line that says what a plan was rendered for.
pub fn for_cluster(
    load: &mut LoadOptions,
    explicit: Option<KubeVersion>,
    reported: Option<KubeVersion>,
) -> Result<TargetVersion> {
    let (target, note) =
        TargetVersion::resolve(explicit, reported).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
    load.gates.version = target.version;
    Ok(target)
}

impl SourceArgs {
    /// Loader options from the flags.
    pub fn load_options(&self) -> LoadOptions {
        self.load.load_options()
    }

    /// The git source named by `--repo`, if any.
    pub fn git(&self) -> Option<GitSource> {
        let repo = self.repo.as_ref()?;
        crate::source::register_url(repo);
        let mut auth = GitAuth::from_env();
        if let Some(key) = &self.ssh_key {
            auth.ssh_key = Some(key.clone());
        }
        auth.known_hosts = self.known_hosts.clone();
        Some(GitSource {
            url: repo.clone(),
            reference: self.reference.clone().unwrap_or_else(|| "HEAD".into()),
            path: self.path.clone().unwrap_or_default(),
            cache_dir: self.cache_dir.clone().unwrap_or_else(default_cache_dir),
            auth,
            progress: true,
            timeout: self.git_timeout,
            render: self.load.render_options(),
        })
    }

    /// The source the flags name.
    pub fn source(&self) -> ManifestSource {
        match self.git() {
            Some(g) => ManifestSource::Git(g),
            None => ManifestSource::Local(
                LocalSource::new(self.manifests.clone()).with_render(self.load.render_options()),
            ),
        }
    }
}

/// Desired DaemonSets read from a source, with what identifies it.
pub struct Loaded {
    /// The valid DaemonSets.
    pub desired: Vec<Desired>,
    /// Unknown fields kept as warnings (`--validate=warn`).
    pub warnings: Vec<FieldWarning>,
    /// `source: <url> @ <ref> (<commit>)` for a git source.
    pub line: Option<String>,
    /// The short commit id, for a git source.
    pub commit: Option<String>,
    /// Where the DaemonSets were read from, as the in-cluster records keep it.
    pub record: crate::cluster::RecordSource,
    /// `overlays/prod with kustomize v5.5.0 via kubectl`, when the source was rendered.
    pub rendered: Option<String>,
}

/// Reads the desired DaemonSets from `source`; what the source noticed goes to stderr. Fails,
/// and so plans nothing, on any invalid DaemonSet or an empty render.
pub fn load(source: &ManifestSource, opts: &LoadOptions) -> Result<Loaded> {
    let started = std::time::Instant::now();
    let rendered = source.load(opts)?;
    tracing::info!(
        source = %crate::source::redact(&crate::source::Source::describe(source)),
        revision = %rendered.revision,
        files = rendered.files,
        daemonsets = rendered.manifests.daemonsets.len(),
        invalid = rendered.manifests.invalid.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "source read"
    );
    print_notes(&rendered);
    let warnings = field_warnings(&rendered.manifests);
    print_warnings(&warnings);
    let record = crate::source::record_source(source, &rendered.revision);
    Ok(Loaded {
        desired: rendered.desired()?,
        warnings,
        line: source.origin_line(&rendered),
        commit: matches!(source, ManifestSource::Git(_))
            .then(|| rendered.short_revision().to_string()),
        record,
        rendered: rendered.rendered_line(),
    })
}

/// The desired DaemonSets in `paths` (files or directories; overlays and charts rendered as
/// `render` says), read as `opts` say; an error, planning nothing, if any is invalid or there
/// is none.
pub fn load_desired_paths(
    paths: &[PathBuf],
    opts: &LoadOptions,
    render: &RenderOptions,
) -> Result<Vec<Desired>> {
    let source =
        ManifestSource::Local(LocalSource::new(paths.to_vec()).with_render(render.clone()));
    Ok(load(&source, opts)?.desired)
}

/// `rendered: overlays/prod with kustomize v5.5.0 via kubectl, for Kubernetes v1.34 (the
/// cluster's)`: what rendered a source and for which version; `None` when nothing was
/// rendered.
pub fn rendered_line(rendered: Option<&str>, target: &TargetVersion) -> Option<String> {
    rendered.map(|r| format!("rendered: {r}, for {target}"))
}

/// An unknown field of a DaemonSet, kept as a warning (`--validate=warn`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldWarning {
    /// The DaemonSet's namespace.
    pub namespace: String,
    /// The DaemonSet's name.
    pub name: String,
    /// Where it came from (file and document).
    pub source: String,
    /// The API server's words: `unknown field "spec.foo"`.
    pub message: String,
}

/// The warnings of every valid DaemonSet in `m`, in input order.
pub fn field_warnings(m: &Manifests) -> Vec<FieldWarning> {
    m.daemonsets
        .iter()
        .flat_map(|d| {
            let meta = &d.daemonset.metadata;
            d.warnings.iter().map(move |w| FieldWarning {
                namespace: meta.namespace.clone().unwrap_or_default(),
                name: meta.name.clone().unwrap_or_default(),
                source: d.source.to_string(),
                message: w.clone(),
            })
        })
        .collect()
}

/// Prints each warning to stderr, as kubectl prints the API server's warnings.
pub fn print_warnings(warnings: &[FieldWarning]) {
    for w in warnings {
        eprintln!(
            "warning: {}/{} ({}): {} (dropped; --validate=warn)",
            w.namespace, w.name, w.source, w.message
        );
    }
}

/// Adds each warning to the plan of its DaemonSet.
pub fn add_warnings(plan: &mut crate::plan::Plan, warnings: &[FieldWarning]) {
    for w in warnings {
        if let Some(ds) = plan
            .daemonsets
            .iter_mut()
            .find(|d| d.namespace == w.namespace && d.name == w.name)
        {
            ds.warnings.push(format!(
                "{} in the manifest: dropped, as the API server drops it with --validate=warn",
                w.message
            ));
        }
    }
}

/// Prints what the source noticed (submodules skipped, …) to stderr.
pub fn print_notes(r: &Rendered) {
    for n in &r.notes {
        eprintln!("note: {n}");
    }
}

/// A positive duration for `--git-timeout` and `--render-timeout`.
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    crate::manifest::duration::parse_positive(s, "30s, 2m")
}

/// `--kube-version`: `X.Y` (or `X.Y.Z`), one of the supported versions.
fn parse_kube_version(s: &str) -> Result<KubeVersion, String> {
    let v: KubeVersion = s.parse()?;
    if !v.is_supported() {
        return Err(format!(
            "Kubernetes {s} is not supported: daemonsync renders and validates for {} to {}",
            KubeVersion::OLDEST.minor_string(),
            KubeVersion::NEWEST.minor_string()
        ));
    }
    Ok(v)
}
