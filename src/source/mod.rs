//! Sources: where manifests come from.
//!
//! * [`local::LocalSource`]: local files and directories (a plain path, or a work tree).
//! * [`git::GitSource`]: a git repository at a ref (branch, tag or commit id), read from the
//!   commit's tree blob by blob, without a work-tree checkout. Remote repositories are mirrored
//!   as bare repositories in a cache directory and fetched, not re-cloned.
//! * [`watch`]: re-render a directory source when files change, one re-plan per burst of edits.
//! * [`tracked::Tracked`]: keeps the last good render in effect when a source fails.
//! * [`render`]: Kustomize overlays and Helm charts rendered into manifests, in a sandbox.
//!
//! Safety, the same for every source: paths are confined to the root (no `..`, no absolute
//! `--path`, symlinks followed only when their target stays inside), limits on file count,
//! single file size and total bytes ([`crate::manifest::Limits`]), and a render without any
//! DaemonSet is an error, never "desired state is empty". Credentials never appear in errors or
//! output: every URL goes through [`redact`] first.

pub mod git;
pub mod local;
mod redact;
pub mod render;
pub mod tracked;
mod tree;
pub mod watch;

pub use git::{GitAuth, GitSource};
pub use local::LocalSource;
pub use redact::{redact, redact_url, register_url};
pub use render::{RenderError, RenderInfo, RenderMode, RenderOptions, Renderer};
pub use tracked::{Refresh, Tracked};

use crate::manifest::{InvalidDaemonSet, LoadError, LoadOptions, Manifests, Overrun};
use crate::plan::Desired;

/// The result of reading a source: the manifests and the exact revision they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The full commit id for git; `local:<digest of paths and contents>` for a directory.
    pub revision: String,
    /// The loaded manifests (at least one DaemonSet).
    pub manifests: Manifests,
    /// How many manifest files were read.
    pub files: usize,
    /// Things worth telling the user that are not errors (e.g. a submodule not followed).
    pub notes: Vec<String>,
    /// What rendered the manifests (Kustomize, Helm), one entry per rendered directory;
    /// empty when the files were read as they are.
    pub rendered_by: Vec<RenderInfo>,
}

impl Rendered {
    /// The first 12 characters of the revision (a short commit id).
    pub fn short_revision(&self) -> &str {
        short_revision(&self.revision)
    }
}

pub use daemonsync_core::record::short_revision;

/// Where DaemonSets read from `source` at `revision` come from, as their records say (URLs
/// redacted).
pub fn record_source(source: &ManifestSource, revision: &str) -> crate::cluster::RecordSource {
    use crate::cluster::RecordSource;
    match source {
        ManifestSource::Git(g) => RecordSource {
            repository: Some(redact(&g.url)),
            path: Some(g.path.clone()).filter(|p| !p.is_empty()),
            commit: Some(revision.to_string()),
            writer: None,
        },
        ManifestSource::Local(_) => RecordSource {
            repository: None,
            path: Some(redact(&Source::describe(source))),
            commit: None,
            writer: None,
        },
    }
}

impl Rendered {
    /// The valid DaemonSets as the planner's input, or an error listing every invalid one:
    /// nothing is planned from a partly broken source.
    pub fn desired(&self) -> Result<Vec<Desired>, SourceError> {
        if !self.manifests.invalid.is_empty() {
            if !self.rendered_by.is_empty() {
                return Err(SourceError::InvalidRendered(self.manifests.invalid.clone()));
            }
            return Err(SourceError::Invalid(self.manifests.invalid.clone()));
        }
        Ok(self.valid_desired())
    }

    /// `overlays/prod with kustomize v5.5.0 via kubectl`, for every rendered directory; `None`
    /// when nothing was rendered.
    pub fn rendered_line(&self) -> Option<String> {
        (!self.rendered_by.is_empty()).then(|| {
            self.rendered_by
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    /// The valid DaemonSets as the planner's input, ignoring invalid ones (the base side of a
    /// pull request, which is only compared with).
    pub fn valid_desired(&self) -> Vec<Desired> {
        self.manifests
            .daemonsets
            .iter()
            .map(|d| Desired {
                source: d.source.to_string(),
                daemonset: d.daemonset.clone(),
                config: d.config.clone(),
            })
            .collect()
    }
}

impl ManifestSource {
    /// `source: <url> @ <ref> (<commit>)` for a git source: the exact revision a plan used.
    pub fn origin_line(&self, rendered: &Rendered) -> Option<String> {
        match self {
            ManifestSource::Local(_) => None,
            ManifestSource::Git(g) => Some(format!(
                "source: {} @ {} ({})",
                g.display_url(),
                g.reference,
                rendered.short_revision()
            )),
        }
    }
}

/// Where manifests come from, as a command names them: local paths or a git repository.
#[derive(Debug, Clone)]
pub enum ManifestSource {
    /// `--manifests PATH...`.
    Local(LocalSource),
    /// `--repo URL --ref REF --path DIR`.
    Git(GitSource),
}

impl Source for ManifestSource {
    fn describe(&self) -> String {
        match self {
            ManifestSource::Local(s) => s.describe(),
            ManifestSource::Git(s) => s.describe(),
        }
    }

    fn load(&self, opts: &LoadOptions) -> Result<Rendered, SourceError> {
        match self {
            ManifestSource::Local(s) => s.load(opts),
            ManifestSource::Git(s) => s.load(opts),
        }
    }

    fn descends_from(&self, new: &str, old: &str) -> Result<Option<bool>, SourceError> {
        match self {
            ManifestSource::Local(s) => s.descends_from(new, old),
            ManifestSource::Git(s) => s.descends_from(new, old),
        }
    }
}

/// Something manifests can be read from.
pub trait Source {
    /// A human-readable, credential-free description (`<url> @ <ref>` or a path).
    fn describe(&self) -> String;
    /// Read and load the manifests.
    fn load(&self, opts: &LoadOptions) -> Result<Rendered, SourceError>;
    /// Whether revision `new` descends from (or equals) `old`; `None` when the source has no
    /// history (a directory). Used to notice force-pushed history.
    fn descends_from(&self, new: &str, old: &str) -> Result<Option<bool>, SourceError> {
        let _ = (new, old);
        Ok(None)
    }
}

/// Why a source could not be read. Messages never contain credentials and say what to do next.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Talking to the repository failed (unreachable, authentication refused, TLS, host key).
    #[error(
        "cannot fetch {url}: {message}; nothing was planned or changed; check the URL, the \
         network and the credentials (DAEMONSYNC_GIT_TOKEN, --ssh-key, --known-hosts)"
    )]
    Fetch {
        /// The redacted URL.
        url: String,
        /// The redacted cause.
        message: String,
    },
    /// A repository could not be opened or read.
    #[error("repository {url}: {message}")]
    Repository {
        /// The redacted URL or path.
        url: String,
        /// The redacted cause.
        message: String,
    },
    /// The ref does not exist (deleted branch, mistyped tag, unknown commit).
    #[error(
        "ref {reference:?} not found in {url}: it is neither a commit id, a branch nor a tag \
         (it may have been deleted); check --ref / --base / --head"
    )]
    RefNotFound {
        /// The redacted URL.
        url: String,
        /// The ref asked for.
        reference: String,
    },
    /// `--path` is absolute or contains `..`.
    #[error(
        "path {path:?} is not allowed: paths must be relative to the repository root and must \
         not contain '..'"
    )]
    PathNotAllowed {
        /// The path given.
        path: String,
    },
    /// `--path` does not exist at this revision.
    #[error("path {path:?} does not exist at {revision}; check --path")]
    PathNotFound {
        /// The path given.
        path: String,
        /// Where it was looked up.
        revision: String,
    },
    /// A symlink points outside the repository (or is absolute, or loops).
    #[error(
        "symlink {link:?} points to {target:?}, outside the repository; symlinks are followed \
         only when their target stays inside; replace the link with the file itself"
    )]
    SymlinkEscapes {
        /// The link's path inside the repository.
        link: String,
        /// Its target as written.
        target: String,
    },
    /// More manifest files than [`crate::manifest::Limits::max_files`].
    #[error(
        "more than {limit} manifest files (the limit was reached at {path:?}); point --path \
         at a smaller directory or raise the file limit"
    )]
    TooManyFiles {
        /// The file at which the limit was reached.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// A file is bigger than [`crate::manifest::Limits::max_file_bytes`].
    #[error(
        "{file}: file is {size} bytes, more than the limit of {limit} bytes; split it into \
         smaller files or raise the file size limit"
    )]
    FileTooLarge {
        /// The file.
        file: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// All files together exceed [`crate::manifest::Limits::max_total_bytes`].
    #[error(
        "reading {file} brings the total to {total} bytes, more than the limit of {limit} \
         bytes; point --path at a smaller directory or raise the total size limit"
    )]
    TotalTooLarge {
        /// The file that crossed the limit.
        file: String,
        /// Bytes read so far including it.
        total: u64,
        /// The limit.
        limit: u64,
    },
    /// No manifest file, or no DaemonSet at all: never treated as "desired state is empty".
    #[error(
        "{what} in {source_name}; refusing to treat this as an empty desired state (nothing \
         was planned and nothing will be deleted); check --manifests, or --repo, --ref and --path"
    )]
    Empty {
        /// What was missing.
        what: String,
        /// The source description.
        source_name: String,
    },
    /// Directories nested deeper than [`crate::manifest::Limits::max_dir_depth`].
    #[error(
        "{path}: directories nested more than {limit} levels deep; point --path or --manifests \
         at the manifests themselves"
    )]
    TooDeep {
        /// The directory at which the limit was reached.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// A symlink whose target is longer than [`crate::manifest::Limits::max_link_bytes`].
    #[error(
        "{link}: symlink target is {size} bytes, more than {limit}; it cannot be a path inside \
         the repository; replace the link with the file itself"
    )]
    LinkTooLong {
        /// The link.
        link: String,
        /// The target's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Something that is not a regular file (a FIFO, socket or device) where a manifest was
    /// expected: reading it could block for ever.
    #[error(
        "{path}: not a regular file (a FIFO, socket or device); name manifest files or \
         directories"
    )]
    NotAFile {
        /// The path.
        path: String,
    },
    /// Two definitions of one DaemonSet (two files, a file and a symlink to it, two
    /// documents): applying both would flap between them for ever.
    #[error(
        "DaemonSet {name} is defined twice: {first} and {second}; kubectl would apply one over \
         the other; keep one definition (a symlink to a manifest in the same tree counts as a \
         second one)"
    )]
    Duplicate {
        /// `namespace/name`.
        name: String,
        /// The first definition (file, document, line).
        first: String,
        /// The second one.
        second: String,
    },
    /// A file is not valid UTF-8.
    #[error("{file}: not UTF-8 text; save the manifest as UTF-8")]
    NotUtf8 {
        /// The file.
        file: String,
    },
    /// The new commit does not descend from the last good one: history was rewritten.
    #[error(
        "history of {source_name} was rewritten (force-push): {new} does not descend from the \
         last good commit {old}, which stays in effect; check the push, then accept the new \
         history explicitly"
    )]
    HistoryRewritten {
        /// The source description.
        source_name: String,
        /// The last good revision.
        old: String,
        /// The new revision.
        new: String,
    },
    /// A local file or directory could not be read.
    #[error("{path}: cannot read: {source}; check that the path exists and is readable")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The manifests themselves are broken.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Some DaemonSets are invalid: nothing is planned from a partly broken source.
    #[error("{}", crate::manifest::invalid_message(.0, "; nothing was planned"))]
    Invalid(Vec<InvalidDaemonSet>),
    /// Some rendered DaemonSets are invalid: each error names the rendered directory, the
    /// renderer and the DaemonSet (`overlays/prod (kustomize) → DaemonSet kube-system/cilium:
    /// spec.template…`).
    #[error("{}", invalid_rendered_message(.0))]
    InvalidRendered(Vec<InvalidDaemonSet>),
    /// A Kustomize or Helm render failed.
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// One line per error of a rendered DaemonSet: `SOURCE (RENDERER) → DaemonSet NS/NAME: ERROR`.
fn invalid_rendered_message(invalid: &[InvalidDaemonSet]) -> String {
    let mut msg = format!(
        "{} invalid DaemonSet(s) in the rendered manifests; nothing was planned:",
        invalid.len()
    );
    for bad in invalid {
        for e in &bad.errors {
            msg.push_str(&format!(
                "\n  {} → DaemonSet {}: {e} (rendered document {})",
                bad.source.file, bad.name, bad.source.document
            ));
        }
    }
    msg
}

/// Loads manifest files (label, text) in order and checks the result is not empty.
pub(crate) fn load_files(
    files: &[(String, String)],
    source_name: &str,
    opts: &LoadOptions,
) -> Result<Manifests, SourceError> {
    if files.is_empty() {
        return Err(SourceError::Empty {
            what: "no manifest file (*.yaml, *.yml, *.json)".into(),
            source_name: source_name.to_string(),
        });
    }
    let mut out = Manifests::default();
    for (label, text) in files {
        out.extend(crate::manifest::load_str(label, text, opts)?);
    }
    refuse_duplicates(&out)?;
    // Once every file is in: a DaemonSet may reference config from any of them.
    crate::manifest::versioning::version(&mut out);
    if out.daemonsets.is_empty() && out.invalid.is_empty() {
        return Err(SourceError::Empty {
            what: format!(
                "no apps/v1 DaemonSet in {} manifest file(s) ({} other object(s))",
                files.len(),
                out.others.len()
            ),
            source_name: source_name.to_string(),
        });
    }
    Ok(out)
}

/// Every DaemonSet (valid or not) once: the first second definition found is an error naming
/// both places.
fn refuse_duplicates(m: &Manifests) -> Result<(), SourceError> {
    let mut seen: std::collections::HashMap<String, &crate::manifest::DocRef> =
        std::collections::HashMap::new();
    let valid = m.daemonsets.iter().map(|d| {
        let meta = &d.daemonset.metadata;
        (
            format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default()
            ),
            &d.source,
        )
    });
    let invalid = m
        .invalid
        .iter()
        .filter(|i| i.name != "<unnamed>")
        .map(|i| (i.name.clone(), &i.source));
    for (name, source) in valid.chain(invalid) {
        if let Some(first) = seen.insert(name.clone(), source) {
            let (first, second) = if first <= source {
                (first, source)
            } else {
                (source, first)
            };
            return Err(SourceError::Duplicate {
                name,
                first: first.to_string(),
                second: second.to_string(),
            });
        }
    }
    Ok(())
}

/// True for `*.yaml`, `*.yml` and `*.json` (any case). Names are bytes: a name that is not
/// UTF-8 is still a manifest when its extension says so (and is read, never skipped).
pub(crate) fn is_manifest_name(name: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(b".yaml") || lower.ends_with(b".yml") || lower.ends_with(b".json")
}

impl SourceError {
    /// A source's wording of a file that does not fit the load's [`crate::manifest::ReadBudget`].
    pub fn overrun(file: &str, o: Overrun) -> Self {
        match o {
            Overrun::File { size, limit } => SourceError::FileTooLarge {
                file: file.to_string(),
                size,
                limit,
            },
            Overrun::Total { total, limit } => SourceError::TotalTooLarge {
                file: file.to_string(),
                total,
                limit,
            },
        }
    }
}
