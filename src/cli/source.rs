//! The flags that say where manifests come from, shared by `plan` and `apply`: files and
//! directories, or a git repository at a ref; and how they are read ([`LoadArgs`]: namespace
//! and `--validate`), shared by every command that reads manifests. They become a
//! [`ManifestSource`] and [`LoadOptions`] once, here.

use crate::manifest::{FieldValidation, LoadOptions, Manifests};
use crate::plan::Desired;
use crate::source::git::default_cache_dir;
use crate::source::{GitAuth, GitSource, LocalSource, ManifestSource, Rendered, Source};
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

/// How manifests are read, for every command that reads them (`plan`, `apply`, `render`,
/// `status`).
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
}

impl LoadArgs {
    /// Loader options from the flags.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            default_namespace: self.namespace.clone(),
            field_validation: self.validate.into(),
            ..LoadOptions::default()
        }
    }
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
            render: crate::source::RenderOptions::default(),
        })
    }

    /// The source the flags name.
    pub fn source(&self) -> ManifestSource {
        match self.git() {
            Some(g) => ManifestSource::Git(g),
            None => ManifestSource::Local(LocalSource::new(self.manifests.clone())),
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
    })
}

/// The desired DaemonSets in `paths` (files or directories), read as `opts` say; an error,
/// planning nothing, if any is invalid or there is none.
pub fn load_desired_paths(paths: &[PathBuf], opts: &LoadOptions) -> Result<Vec<Desired>> {
    let source = ManifestSource::Local(LocalSource::new(paths.to_vec()));
    Ok(load(&source, opts)?.desired)
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

/// A positive duration for `--git-timeout`.
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    crate::manifest::duration::parse_positive(s, "30s, 2m")
}
