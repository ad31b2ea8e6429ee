//! The flags that say where manifests come from, shared by `plan` and `apply`: files and
//! directories, or a git repository at a ref. They become a [`ManifestSource`] and
//! [`LoadOptions`] once, here.

use crate::manifest::LoadOptions;
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
    /// Namespace for manifests that name none (as kubectl does).
    #[arg(
        long,
        short = 'n',
        default_value = "default",
        env = "DAEMONSYNC_NAMESPACE"
    )]
    pub namespace: String,
}

impl SourceArgs {
    /// Loader options from the flags.
    pub fn load_options(&self) -> LoadOptions {
        load_options(&self.namespace)
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

/// Loader options for manifests without a namespace getting `namespace`.
pub(crate) fn load_options(namespace: &str) -> LoadOptions {
    LoadOptions {
        default_namespace: namespace.to_string(),
        ..LoadOptions::default()
    }
}

/// Desired DaemonSets read from a source, with what identifies it.
pub struct Loaded {
    /// The valid DaemonSets.
    pub desired: Vec<Desired>,
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
    let record = match source {
        ManifestSource::Git(g) => crate::cluster::RecordSource {
            repository: Some(crate::source::redact(&g.url)),
            path: Some(g.path.clone()).filter(|p| !p.is_empty()),
            commit: Some(rendered.revision.clone()),
        },
        ManifestSource::Local(_) => crate::cluster::RecordSource {
            repository: None,
            path: Some(crate::source::redact(&Source::describe(source))),
            commit: None,
        },
    };
    Ok(Loaded {
        desired: rendered.desired()?,
        line: source.origin_line(&rendered),
        commit: matches!(source, ManifestSource::Git(_))
            .then(|| rendered.short_revision().to_string()),
        record,
    })
}

/// The desired DaemonSets in `paths` (files or directories), manifests without a namespace
/// getting `namespace`; an error, planning nothing, if any is invalid or there is none.
pub fn load_desired_paths(paths: &[PathBuf], namespace: &str) -> Result<Vec<Desired>> {
    let source = ManifestSource::Local(LocalSource::new(paths.to_vec()));
    Ok(load(&source, &load_options(namespace))?.desired)
}

/// Prints what the source noticed (submodules skipped, …) to stderr.
pub fn print_notes(r: &Rendered) {
    for n in &r.notes {
        eprintln!("note: {n}");
    }
}

/// A positive duration for `--git-timeout`.
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    let d = crate::cluster::sim::config::parse_duration(s)?;
    match std::time::Duration::try_from(d) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("{s:?} is not a positive duration (e.g. 30s, 2m)")),
    }
}
