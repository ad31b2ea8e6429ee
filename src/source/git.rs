//! Git repositories read with git2, at a ref, without a work-tree checkout.
//!
//! A local path is opened directly. A URL (`https://`, `http://`, `ssh://`, `git://`,
//! `file://`, or scp-like `user@host:path`) is mirrored as a bare repository under
//! `<cache-dir>/repos/<hash of the redacted URL>` and fetched (`+refs/heads/*`, `+refs/tags/*`,
//! pruned) on every load, never re-cloned. The remote is anonymous: the URL, and any credential
//! in it, is never written to the mirror's config.
//!
//! Everything here is blocking; async callers run it in `tokio::task::spawn_blocking`.

use super::render::{self, RenderOptions};
use super::tree::{Found, TreeFiles, TreeReader, subpath_components};
use super::{Rendered, Source, SourceError, load_files, redact};
use crate::manifest::LoadOptions;
use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, FetchOptions, FetchPrune,
    ObjectType, Oid, RemoteCallbacks, Repository,
};
use std::cell::RefCell;
use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Environment variable holding an HTTPS token (never a flag: flags land in shell history).
pub const TOKEN_ENV: &str = "DAEMONSYNC_GIT_TOKEN";
/// Environment variable naming an SSH private key file.
pub const SSH_KEY_ENV: &str = "DAEMONSYNC_SSH_KEY";
/// Environment variable holding the SSH key's passphrase, if it has one.
pub const SSH_PASSPHRASE_ENV: &str = "DAEMONSYNC_SSH_KEY_PASSPHRASE";

/// Credentials for remote repositories.
#[derive(Clone, Default)]
pub struct GitAuth {
    /// HTTPS token (username `x-access-token` unless the URL names one).
    pub token: Option<String>,
    /// SSH private key file; without it the SSH agent is asked.
    pub ssh_key: Option<PathBuf>,
    /// Passphrase of the SSH key.
    pub ssh_passphrase: Option<String>,
    /// known_hosts file for SSH host key checking (default `~/.ssh/known_hosts`).
    pub known_hosts: Option<PathBuf>,
}

impl std::fmt::Debug for GitAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitAuth")
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("ssh_key", &self.ssh_key)
            .field(
                "ssh_passphrase",
                &self.ssh_passphrase.as_ref().map(|_| "***"),
            )
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

impl GitAuth {
    /// Reads [`TOKEN_ENV`], [`SSH_KEY_ENV`] and [`SSH_PASSPHRASE_ENV`].
    pub fn from_env() -> Self {
        let var = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
        GitAuth {
            token: var(TOKEN_ENV),
            ssh_key: var(SSH_KEY_ENV).map(PathBuf::from),
            ssh_passphrase: var(SSH_PASSPHRASE_ENV),
            known_hosts: None,
        }
    }

    fn known_hosts_path(&self) -> Option<PathBuf> {
        self.known_hosts
            .clone()
            .or_else(|| home_dir().map(|h| h.join(".ssh").join("known_hosts")))
    }
}

/// A git repository at a ref, with a subdirectory to read.
#[derive(Debug, Clone)]
pub struct GitSource {
    /// URL or local path.
    pub url: String,
    /// Branch, tag, commit id (or anything `git rev-parse` understands); `HEAD` by default.
    pub reference: String,
    /// Subdirectory (or file) inside the repository; empty for the root.
    pub path: String,
    /// Where remote repositories are mirrored.
    pub cache_dir: PathBuf,
    /// Credentials.
    pub auth: GitAuth,
    /// Show fetch progress on stderr (only when it is a terminal).
    pub progress: bool,
    /// Connect and read timeout of every network operation ([`DEFAULT_NETWORK_TIMEOUT`]): a
    /// server that accepts the connection and then says nothing fails the fetch instead of
    /// hanging it.
    pub timeout: std::time::Duration,
    /// How `path` is rendered when it is a Kustomize overlay or a Helm chart (`--render`).
    pub render: RenderOptions,
}

/// The default `--git-timeout`.
pub const DEFAULT_NETWORK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Sets libgit2's process-wide connect and read timeouts (they apply to HTTP(S) and SSH).
fn set_network_timeouts(timeout: std::time::Duration) -> Result<(), git2::Error> {
    let ms = i32::try_from(timeout.as_millis())
        .unwrap_or(i32::MAX)
        .max(1);
    // SAFETY: these options are plain integers libgit2 reads when it opens a connection;
    // setting them has no other effect, and every fetch of this process sets the same value
    // (`--git-timeout` is parsed once) before it connects.
    #[allow(unsafe_code)]
    unsafe {
        git2::opts::set_server_connect_timeout_in_milliseconds(ms)?;
        git2::opts::set_server_timeout_in_milliseconds(ms)?;
    }
    Ok(())
}

/// The default cache directory: `<user cache dir>/daemonsync`, where the user cache dir is
/// `$XDG_CACHE_HOME` or `~/.cache` (Linux and other Unixes), `~/Library/Caches` (macOS),
/// `%LOCALAPPDATA%` (Windows); `.daemonsync-cache` when none is known.
pub fn default_cache_dir() -> PathBuf {
    user_cache_dir()
        .map(|d| d.join("daemonsync"))
        .unwrap_or_else(|| PathBuf::from(".daemonsync-cache"))
}

fn env_path(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn home_dir() -> Option<PathBuf> {
    env_path("HOME").or_else(|| env_path("USERPROFILE"))
}

fn user_cache_dir() -> Option<PathBuf> {
    if cfg!(windows) {
        env_path("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        home_dir().map(|h| h.join("Library").join("Caches"))
    } else {
        env_path("XDG_CACHE_HOME").or_else(|| home_dir().map(|h| h.join(".cache")))
    }
}

/// True when `url` names a remote (to be mirrored) rather than a local path.
pub fn is_remote_url(url: &str) -> bool {
    if url.contains("://") {
        return true;
    }
    // scp-like syntax: [user[:password]@]host:path, with no slash before the host's colon.
    let first = url.split('/').next().unwrap_or(url);
    match first.rfind('@') {
        Some(at) => first[at + 1..].contains(':'),
        None => false,
    }
}

impl GitSource {
    /// A source for `url` at `reference`, reading `path`, with the default cache and auth from
    /// the environment.
    pub fn new(
        url: impl Into<String>,
        reference: impl Into<String>,
        path: impl Into<String>,
    ) -> Self {
        let url = url.into();
        super::register_url(&url);
        GitSource {
            url,
            reference: reference.into(),
            path: path.into(),
            cache_dir: default_cache_dir(),
            auth: GitAuth::from_env(),
            progress: false,
            timeout: DEFAULT_NETWORK_TIMEOUT,
            render: RenderOptions::default(),
        }
    }

    /// The redacted URL.
    pub fn display_url(&self) -> String {
        redact(&self.url)
    }

    /// The mirror directory used for this URL.
    pub fn mirror_dir(&self) -> PathBuf {
        let key = Oid::hash_object(ObjectType::Blob, self.display_url().as_bytes())
            .map(|o| o.to_string())
            .unwrap_or_else(|_| "mirror".into());
        self.cache_dir.join("repos").join(key)
    }

    fn repo_err(&self, e: impl std::fmt::Display) -> SourceError {
        SourceError::Repository {
            url: self.display_url(),
            message: redact(&e.to_string()),
        }
    }

    /// Opens the repository: a local path directly, a URL through a fetched mirror.
    pub fn open(&self) -> Result<Repository, SourceError> {
        if !is_remote_url(&self.url) {
            return Repository::open(Path::new(&self.url)).map_err(|e| {
                self.repo_err(format!(
                    "{}; --repo must be a git repository (use --manifests for a plain directory)",
                    e.message()
                ))
            });
        }
        let dir = self.mirror_dir();
        let repo = if dir.join("HEAD").exists() {
            Repository::open_bare(&dir).map_err(|e| self.repo_err(e.message()))?
        } else {
            std::fs::create_dir_all(&dir).map_err(|e| SourceError::Io {
                path: dir.display().to_string(),
                source: e,
            })?;
            Repository::init_bare(&dir).map_err(|e| self.repo_err(e.message()))?
        };
        self.fetch(&repo)?;
        Ok(repo)
    }

    fn fetch(&self, repo: &Repository) -> Result<(), SourceError> {
        let url = self.display_url();
        let fetch_err = |message: String| SourceError::Fetch {
            url: url.clone(),
            message: redact(&message),
        };
        let host_key_problem: RefCell<Option<String>> = RefCell::new(None);
        let tried: RefCell<HashSet<u32>> = RefCell::new(HashSet::new());
        let bar = (self.progress && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(0);
            b.set_message(format!("fetching {url}"));
            b
        });
        set_network_timeouts(self.timeout).map_err(|e| fetch_err(e.message().to_string()))?;
        tracing::debug!(url = %url, timeout_s = self.timeout.as_secs(), "fetching");
        let mut remote = repo
            .remote_anonymous(&self.url)
            .map_err(|e| fetch_err(e.message().to_string()))?;
        {
            let mut cb = RemoteCallbacks::new();
            cb.credentials(|_url, user_from_url, allowed| {
                self.credentials(user_from_url, allowed, &mut tried.borrow_mut())
            });
            cb.certificate_check(|cert, host| {
                let Some(hk) = cert.as_hostkey() else {
                    // TLS: let libgit2 and the system's trust store decide.
                    return Ok(CertificateCheckStatus::CertificatePassthrough);
                };
                let (Some(key), Some(kind)) = (hk.hostkey(), hk.hostkey_type()) else {
                    return Ok(CertificateCheckStatus::CertificatePassthrough);
                };
                match self.check_host_key(host, kind.name(), key) {
                    Ok(()) => Ok(CertificateCheckStatus::CertificateOk),
                    Err(msg) => {
                        *host_key_problem.borrow_mut() = Some(msg.clone());
                        Err(git2::Error::from_str(&msg))
                    }
                }
            });
            if let Some(bar) = &bar {
                cb.transfer_progress(|p| {
                    bar.set_length(p.total_objects() as u64);
                    bar.set_position(p.received_objects() as u64);
                    true
                });
            }
            let mut fo = FetchOptions::new();
            fo.remote_callbacks(cb);
            fo.prune(FetchPrune::On);
            fo.download_tags(AutotagOption::None);
            let result = remote.fetch(
                &["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                Some(&mut fo),
                None,
            );
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            if let Err(e) = result {
                let msg = host_key_problem.borrow_mut().take().unwrap_or_else(|| {
                    if e.message().to_ascii_lowercase().contains("timed out") {
                        format!(
                            "no answer within {}s ({}); check that the server is up, or raise --git-timeout",
                            self.timeout.as_secs_f64(),
                            e.message()
                        )
                    } else {
                        e.message().to_string()
                    }
                });
                return Err(fetch_err(msg));
            }
        }
        // Prune refs that disappeared upstream (deleted branches and tags), and point HEAD at
        // the remote's default branch.
        let remote_refs: HashSet<String> = match remote.list() {
            Ok(heads) => heads.iter().map(|h| h.name().to_string()).collect(),
            Err(_) => return Ok(()),
        };
        let stale: Vec<String> = repo
            .references()
            .map_err(|e| self.repo_err(e.message()))?
            .filter_map(|r| r.ok()?.name().ok().map(str::to_string))
            .filter(|n| {
                (n.starts_with("refs/heads/") || n.starts_with("refs/tags/"))
                    && !remote_refs.contains(n)
            })
            .collect();
        for name in stale {
            if let Ok(mut r) = repo.find_reference(&name) {
                r.delete().map_err(|e| self.repo_err(e.message()))?;
            }
        }
        if let Ok(buf) = remote.default_branch()
            && let Ok(name) = buf.as_str()
        {
            let _ = repo.set_head(name);
        }
        Ok(())
    }

    fn credentials(
        &self,
        user_from_url: Option<&str>,
        allowed: CredentialType,
        tried: &mut HashSet<u32>,
    ) -> Result<Cred, git2::Error> {
        let refused = || {
            git2::Error::from_str(
                "authentication refused: no (more) credentials to try; set DAEMONSYNC_GIT_TOKEN \
                 for HTTPS, or --ssh-key / DAEMONSYNC_SSH_KEY or an ssh-agent for SSH",
            )
        };
        if allowed.contains(CredentialType::SSH_KEY) {
            let user = user_from_url.unwrap_or("git");
            if let Some(key) = &self.auth.ssh_key
                && tried.insert(1)
            {
                return Cred::ssh_key(user, None, key, self.auth.ssh_passphrase.as_deref());
            }
            if tried.insert(2) {
                return Cred::ssh_key_from_agent(user);
            }
            return Err(refused());
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT)
            && let Some(token) = &self.auth.token
            && tried.insert(3)
        {
            let user = user_from_url.unwrap_or("x-access-token");
            return Cred::userpass_plaintext(user, token);
        }
        if allowed.contains(CredentialType::USERNAME) && tried.insert(4) {
            return Cred::username(user_from_url.unwrap_or("git"));
        }
        Err(refused())
    }

    fn check_host_key(&self, host: &str, kind: &str, key: &[u8]) -> Result<(), String> {
        let Some(path) = self.auth.known_hosts_path() else {
            return Err(format!(
                "cannot verify the SSH host key of {host}: no known_hosts file; pass \
                 --known-hosts FILE"
            ));
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        known_hosts_check(&text, host, kind, &base64(key)).map_err(|why| {
            format!(
                "SSH host key of {host} not trusted ({why}) in {}; if you trust it, add it with \
                 `ssh-keyscan {host} >> {}`",
                path.display(),
                path.display()
            )
        })
    }

    /// Fetches (once) and renders each of `refs`, in order.
    pub fn load_refs(
        &self,
        refs: &[&str],
        opts: &LoadOptions,
    ) -> Result<Vec<Rendered>, SourceError> {
        let repo = self.open()?;
        refs.iter().map(|r| self.render(&repo, r, opts)).collect()
    }

    /// Fetches (once) and renders each ref with its own options, in order.
    pub fn load_refs_with(
        &self,
        refs: &[(&str, &LoadOptions)],
    ) -> Result<Vec<Rendered>, SourceError> {
        let repo = self.open()?;
        refs.iter()
            .map(|(r, opts)| self.render(&repo, r, opts))
            .collect()
    }

    /// Resolves `reference` to a commit: a full commit id, then `refs/heads/REF`,
    /// `refs/tags/REF`, then anything `git rev-parse` understands.
    pub fn resolve(&self, repo: &Repository, reference: &str) -> Result<Oid, SourceError> {
        let not_found = || SourceError::RefNotFound {
            url: self.display_url(),
            reference: reference.to_string(),
        };
        if reference.len() == 40
            && reference.bytes().all(|b| b.is_ascii_hexdigit())
            && let Ok(oid) = Oid::from_str(reference)
        {
            return repo
                .find_commit(oid)
                .map(|c| c.id())
                .map_err(|_| not_found());
        }
        for name in [
            format!("refs/heads/{reference}"),
            format!("refs/tags/{reference}"),
        ] {
            if let Ok(r) = repo.find_reference(&name) {
                return r
                    .peel_to_commit()
                    .map(|c| c.id())
                    .map_err(|e| self.repo_err(e.message()));
            }
        }
        repo.revparse_single(reference)
            .and_then(|o| o.peel_to_commit())
            .map(|c| c.id())
            .map_err(|_| not_found())
    }

    /// Renders `reference` from an opened repository.
    pub fn render(
        &self,
        repo: &Repository,
        reference: &str,
        opts: &LoadOptions,
    ) -> Result<Rendered, SourceError> {
        let components = subpath_components(&self.path)?;
        let oid = self.resolve(repo, reference)?;
        let commit = repo
            .find_commit(oid)
            .map_err(|e| self.repo_err(e.message()))?;
        let tree = commit.tree().map_err(|e| self.repo_err(e.message()))?;
        let reader = TreeReader::new(repo, tree, &opts.limits);
        let mut files = TreeFiles::new(&opts.limits);
        let name = format!(
            "{} @ {reference} ({})",
            self.display_url(),
            &oid.to_string()[..12]
        );
        let found = reader.lookup(&components)?;
        if matches!(found, Found::Tree(_)) {
            let tree = render::export::GitTree { reader: &reader };
            let label = if components.is_empty() {
                ".".to_string()
            } else {
                components.join("/")
            };
            let job = render::Job {
                tree: &tree,
                dir: components.clone(),
                label,
                values: &tree,
            };
            if let Some(out) = render::render(&job, &self.render, opts)? {
                let files = vec![(out.info.label(), out.text)];
                let manifests = load_files(&files, &name, opts)?;
                return Ok(Rendered {
                    revision: oid.to_string(),
                    manifests,
                    files: 1,
                    notes: out.notes,
                    rendered_by: vec![out.info],
                });
            }
        } else {
            render::refuse_for_files(&self.path, &self.render)?;
        }
        match found {
            Found::Tree(id) => reader.read_dir(id, &components, &mut files)?,
            Found::Blob(id) => reader.read_blob(id, components.join("/"), &mut files)?,
            Found::Submodule => {
                return Err(SourceError::PathNotFound {
                    path: format!("{} (a submodule; submodules are not followed)", self.path),
                    revision: name,
                });
            }
            Found::Missing => {
                return Err(SourceError::PathNotFound {
                    path: self.path.clone(),
                    revision: name,
                });
            }
        }
        let manifests = load_files(&files.files, &name, opts)?;
        Ok(Rendered {
            revision: oid.to_string(),
            manifests,
            files: files.files.len(),
            notes: files.notes,
            rendered_by: Vec::new(),
        })
    }
}

impl Source for GitSource {
    fn describe(&self) -> String {
        format!("{} @ {}", self.display_url(), self.reference)
    }

    fn load(&self, opts: &LoadOptions) -> Result<Rendered, SourceError> {
        let repo = self.open()?;
        self.render(&repo, &self.reference, opts)
    }

    fn descends_from(&self, new: &str, old: &str) -> Result<Option<bool>, SourceError> {
        if new == old {
            return Ok(Some(true));
        }
        // No fetch: load() just fetched.
        let repo = if is_remote_url(&self.url) {
            Repository::open_bare(self.mirror_dir())
        } else {
            Repository::open(Path::new(&self.url))
        }
        .map_err(|e| self.repo_err(e.message()))?;
        let (Ok(new), Ok(old)) = (Oid::from_str(new), Oid::from_str(old)) else {
            return Ok(None);
        };
        // A commit that is gone from the repository cannot be an ancestor.
        Ok(Some(repo.graph_descendant_of(new, old).unwrap_or(false)))
    }
}

/// Checks a host key (`kind`, base64 `key`) against known_hosts text. Lines are
/// `host[,host...] keytype base64 [comment]`; `[host]:port` matches the host; `@revoked`
/// lines reject; hashed (`|1|...`) hosts cannot be matched and are skipped.
pub fn known_hosts_check(text: &str, host: &str, kind: &str, key: &str) -> Result<(), String> {
    let mut known_other_key = false;
    let mut hashed = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let mut first = fields.next().unwrap_or("");
        let revoked = first == "@revoked";
        if first.starts_with('@') {
            first = fields.next().unwrap_or("");
        }
        let (Some(k), Some(b64)) = (fields.next(), fields.next()) else {
            continue;
        };
        if first.starts_with('|') {
            hashed = true;
            continue;
        }
        let matches = first.split(',').any(|h| {
            let h = h
                .strip_prefix('[')
                .and_then(|h| h.split_once("]:"))
                .map_or(h, |(h, _)| h);
            h.eq_ignore_ascii_case(host)
        });
        if !matches {
            continue;
        }
        if k == kind && b64 == key {
            if revoked {
                return Err("the key is marked @revoked".into());
            }
            return Ok(());
        }
        known_other_key = true;
    }
    Err(if known_other_key {
        "known_hosts has a different key for this host: it may have changed, or someone may be \
         intercepting the connection"
            .into()
    } else if hashed {
        "host not found; hashed known_hosts entries (|1|...) are not supported, add an unhashed \
         line"
            .into()
    } else {
        "host not found".into()
    })
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn known_hosts() {
        let text = "# comment\n\
                    github.com,140.82.121.4 ssh-ed25519 AAAAKEY\n\
                    [git.example]:2222 ssh-rsa AAAARSA\n\
                    |1|salt|hash ssh-ed25519 AAAAHASHED\n\
                    @revoked bad.example ssh-ed25519 AAAABAD\n";
        assert!(known_hosts_check(text, "github.com", "ssh-ed25519", "AAAAKEY").is_ok());
        assert!(known_hosts_check(text, "git.example", "ssh-rsa", "AAAARSA").is_ok());
        let changed = known_hosts_check(text, "github.com", "ssh-ed25519", "OTHER").unwrap_err();
        assert!(changed.contains("different key"), "{changed}");
        let unknown = known_hosts_check(text, "nowhere", "ssh-ed25519", "X").unwrap_err();
        assert!(unknown.contains("hashed"), "{unknown}");
        assert!(known_hosts_check(text, "bad.example", "ssh-ed25519", "AAAABAD").is_err());
    }

    #[test]
    fn remote_or_local() {
        assert!(is_remote_url("https://h/x.git"));
        assert!(is_remote_url("file:///tmp/x"));
        assert!(is_remote_url("git@github.com:o/r.git"));
        assert!(!is_remote_url("."));
        assert!(!is_remote_url("/tmp/repo"));
        assert!(!is_remote_url("./a:b"));
    }

    #[test]
    fn credentials_are_offered_once_each_then_refused() {
        let mut src = GitSource::new("https://h/x.git", "main", "");
        src.auth = GitAuth {
            token: Some("t0ken".into()),
            ..GitAuth::default()
        };
        let mut tried = HashSet::new();
        let https = CredentialType::USER_PASS_PLAINTEXT;
        let cred = src.credentials(None, https, &mut tried).unwrap();
        assert_eq!(cred.credtype(), CredentialType::USER_PASS_PLAINTEXT.bits());
        // Refused by the server: asked again, nothing more to offer (no endless loop).
        let err = src.credentials(None, https, &mut tried).err().unwrap();
        assert!(err.message().contains("DAEMONSYNC_GIT_TOKEN"), "{err}");
        assert!(!err.message().contains("t0ken"));

        // SSH without a key file: the agent once, then refused.
        let mut tried = HashSet::new();
        src.auth = GitAuth::default();
        let ssh = CredentialType::SSH_KEY;
        if let Ok(c) = src.credentials(Some("git"), ssh, &mut tried) {
            assert_eq!(c.credtype(), CredentialType::SSH_KEY.bits());
        }
        assert!(src.credentials(Some("git"), ssh, &mut tried).is_err());
    }

    #[test]
    fn auth_debug_hides_secrets() {
        let a = GitAuth {
            token: Some("s3cret".into()),
            ssh_passphrase: Some("pw".into()),
            ..GitAuth::default()
        };
        let s = format!("{a:?}");
        assert!(!s.contains("s3cret") && !s.contains("\"pw\""), "{s}");
    }
}
