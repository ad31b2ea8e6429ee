//! Rendering Kustomize overlays and Helm charts into manifests, as Argo CD's repo server does.
//!
//! A directory holding `kustomization.yaml` (`.yml`, `Kustomization`) is built with
//! `kustomize build` (or `kubectl kustomize` when no `kustomize` is on `PATH`), with
//! `--load-restrictor LoadRestrictionsRootOnly`; one holding `Chart.yaml` with `helm
//! template`, for the release, namespace, values files and Kubernetes version of the plan.
//! [`RenderMode`] chooses (`auto` by those files).
//!
//! The renderer never sees the repository or the user's files: the directories it needs are
//! copied out of the commit's tree (or the directory on disk) into a temporary directory
//! ([`export`]) with the containment rules of every source, and it runs there ([`exec`]) with
//! a scrubbed environment, a deadline, and its output capped by the manifest budgets. Remote
//! kustomize bases and unvendored chart dependencies are refused before it runs
//! ([`kustomize`], [`helm`]). What it prints goes through the same loader as any manifest
//! file, named after the directory and the renderer (`overlays/prod (kustomize)`).

mod exec;
pub(crate) mod export;
mod helm;
mod kustomize;

use crate::manifest::LoadOptions;
use crate::source::SourceError;
use export::{Export, Kind, Tree};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The default `--render-timeout`.
pub const DEFAULT_RENDER_TIMEOUT: Duration = Duration::from_secs(60);

/// How a source's directory is turned into manifests (`--render`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenderMode {
    /// Kustomize for a directory with a kustomization file, Helm for one with `Chart.yaml`,
    /// the files as they are otherwise.
    #[default]
    Auto,
    /// The files as they are.
    None,
    /// Always Kustomize (the directory must hold a kustomization file).
    Kustomize,
    /// Always Helm (the directory must hold `Chart.yaml`).
    Helm,
}

/// The tool that rendered a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renderer {
    /// `kustomize build` or `kubectl kustomize`.
    Kustomize,
    /// `helm template`.
    Helm,
}

impl std::fmt::Display for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Renderer::Kustomize => "kustomize",
            Renderer::Helm => "helm",
        })
    }
}

/// How sources are rendered: the `--render` flags, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// Which renderer (`--render`).
    pub mode: RenderMode,
    /// Helm values files (`--values`), in order: relative to the repository root for a git
    /// source, to [`RenderOptions::working_dir`] for a directory.
    pub values: Vec<String>,
    /// The Helm release name (`--release`); the chart's name by default.
    pub release: Option<String>,
    /// How long one renderer may run (`--render-timeout`).
    pub timeout: Duration,
    /// Let kustomize fetch remote bases and resources (`--allow-remote-bases`).
    pub allow_remote_bases: bool,
    /// Pass Kustomize's `helmCharts:` through (`--enable-helm`).
    pub enable_helm: bool,
    /// The directories searched for `kustomize`, `kubectl` and `helm`, and the `PATH` they
    /// run with; the process's `PATH` when `None`.
    pub tools_path: Option<OsString>,
    /// The directory local paths (`--manifests`, `--values`) are relative to and contained in;
    /// the current directory when `None`.
    pub working_dir: Option<PathBuf>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            mode: RenderMode::Auto,
            values: Vec::new(),
            release: None,
            timeout: DEFAULT_RENDER_TIMEOUT,
            allow_remote_bases: false,
            enable_helm: false,
            tools_path: None,
            working_dir: None,
        }
    }
}

impl RenderOptions {
    fn tools_path(&self) -> OsString {
        self.tools_path
            .clone()
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default()
    }

    /// The directory local paths are relative to.
    pub fn working_dir(&self) -> Result<PathBuf, SourceError> {
        match &self.working_dir {
            Some(d) => Ok(d.clone()),
            None => std::env::current_dir().map_err(|e| SourceError::Io {
                path: ".".into(),
                source: e,
            }),
        }
    }
}

/// What rendered a source: the renderer, the tool and its version, and the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderInfo {
    /// Kustomize or Helm.
    pub renderer: Renderer,
    /// The tool and its version: `kustomize v5.5.0 via kubectl`, `helm v3.16.2`.
    pub tool: String,
    /// The directory rendered, as the source names it (`overlays/prod`).
    pub path: String,
}

impl RenderInfo {
    /// How rendered manifests are labelled: `overlays/prod (kustomize)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.path, self.renderer)
    }
}

impl std::fmt::Display for RenderInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} with {}", self.path, self.tool)
    }
}

/// Why a render failed. Every message names the directory or file, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The renderer is not installed.
    #[error("{path} is rendered with {renderer}, but {missing}")]
    MissingBinary {
        /// The directory.
        path: String,
        /// Kustomize or Helm.
        renderer: Renderer,
        /// Which binary is missing and how to get it.
        missing: String,
    },
    /// The renderer could not be started (or waited for).
    #[error("{what}: could not run it: {message}")]
    Start {
        /// The command, as `kustomize build overlays/prod`.
        what: String,
        /// Why.
        message: String,
    },
    /// The renderer exited with an error.
    #[error("{what} {status}: {stderr}; nothing was planned")]
    Failed {
        /// The command.
        what: String,
        /// `exited 1`, or killed by a signal.
        status: String,
        /// Its stderr, redacted.
        stderr: String,
    },
    /// The renderer ran past `--render-timeout`.
    #[error(
        "{what} did not finish within {}s and was killed (with every process it started); \
         nothing was planned; raise --render-timeout if it is just slow",
        timeout.as_secs_f64()
    )]
    TimedOut {
        /// The command.
        what: String,
        /// The deadline.
        timeout: Duration,
    },
    /// The renderer printed more than a manifest file may hold.
    #[error(
        "{what} printed more than {limit} bytes, the limit of one manifest file, and was \
         killed; nothing was planned; render a smaller directory"
    )]
    OutputTooLarge {
        /// The command.
        what: String,
        /// The cap.
        limit: u64,
    },
    /// The rendering is not UTF-8 text.
    #[error("{what} printed something that is not UTF-8 text; nothing was planned")]
    NotText {
        /// The command.
        what: String,
    },
    /// A kustomization names a remote base or resource.
    #[error(
        "{file}:{line}: {field} entry {entry:?} is remote; a plan does not fetch from the \
         network on a pull request's say-so: vendor it into the repository, or pass \
         --allow-remote-bases"
    )]
    RemoteBase {
        /// The kustomization file.
        file: String,
        /// Its line.
        line: usize,
        /// `resources`, `bases`, `components`, …
        field: String,
        /// The entry.
        entry: String,
    },
    /// A kustomization's `helmCharts:` names a chart that is not in its chart home.
    #[error(
        "{file}:{line}: helm chart {chart:?} is not vendored in {home}/ and would be pulled \
         from {repo}; a plan does not fetch from the network on a pull request's say-so: \
         vendor it (`helm pull {chart} --repo {repo} --untar --untardir {home}`), or pass \
         --allow-remote-bases"
    )]
    RemoteChart {
        /// The kustomization file.
        file: String,
        /// The line of its `repo:`.
        line: usize,
        /// The chart.
        chart: String,
        /// The repository.
        repo: String,
        /// The chart home.
        home: String,
    },
    /// A kustomization names a path outside the tree (absolute, or `..` above the root).
    #[error(
        "{file}:{line}: {entry:?} leads outside the repository; a render reads only the \
         repository's own files"
    )]
    OutsideTree {
        /// The kustomization file.
        file: String,
        /// Its line.
        line: usize,
        /// The entry.
        entry: String,
    },
    /// A chart dependency is not in `charts/`.
    #[error(
        "{file}: dependency {dependency:?}{} is not vendored in {chart}/charts/; a plan never \
         downloads charts: run `helm dependency build {chart}` and commit {chart}/charts/",
        if repository.is_empty() { String::new() } else { format!(" (from {repository})") }
    )]
    Unvendored {
        /// `Chart.yaml` (or `requirements.yaml`).
        file: String,
        /// The dependency's name.
        dependency: String,
        /// Its repository.
        repository: String,
        /// The chart's directory.
        chart: String,
    },
    /// `Chart.yaml` cannot be used.
    #[error("{file}: {message}")]
    Chart {
        /// The file.
        file: String,
        /// Why.
        message: String,
    },
    /// The directory cannot be rendered as asked.
    #[error("{path}: {message}")]
    NotRenderable {
        /// The directory.
        path: String,
        /// Why, and what to do.
        message: String,
    },
    /// A `--values` file is not there.
    #[error("--values {path}: {message}")]
    Values {
        /// The path given.
        path: String,
        /// Why.
        message: String,
    },
}

/// One directory to render.
pub(crate) struct Job<'a> {
    /// The tree the directory is in (a commit's, or a directory on disk).
    pub tree: &'a dyn Tree,
    /// The directory, from the tree's root.
    pub dir: Vec<String>,
    /// How messages and labels name it (`overlays/prod`).
    pub label: String,
    /// Where `--values` files are read.
    pub values: &'a dyn Tree,
}

/// What a render printed, and what rendered it.
#[derive(Debug)]
pub(crate) struct Output {
    /// The manifests.
    pub text: String,
    /// The renderer, its version and the directory.
    pub info: RenderInfo,
    /// What was not copied (directory symlinks, submodules).
    pub notes: Vec<String>,
}

/// Which renderer `mode` picks for `dir` of `tree`; `None`: the files are read as they are.
pub(crate) fn renderer_for(
    tree: &dyn Tree,
    dir: &[String],
    label: &str,
    mode: RenderMode,
) -> Result<Option<Renderer>, SourceError> {
    if mode == RenderMode::None {
        return Ok(None);
    }
    let is_dir = tree.kind(dir)? == Kind::Dir;
    let kustomization = is_dir && kustomize::file_in(tree, dir)?.is_some();
    let mut chart_file = dir.to_vec();
    chart_file.push(helm::CHART_FILE.into());
    let chart = is_dir && tree.kind(&chart_file)? == Kind::File;
    let not = |message: String| RenderError::NotRenderable {
        path: label.to_string(),
        message,
    };
    Ok(match mode {
        RenderMode::None => None,
        RenderMode::Auto => match (kustomization, chart) {
            (true, true) => {
                return Err(not(
                    "it holds both a kustomization and Chart.yaml; choose with --render \
                     kustomize or --render helm"
                        .into(),
                )
                .into());
            }
            (true, false) => Some(Renderer::Kustomize),
            (false, true) => Some(Renderer::Helm),
            (false, false) => None,
        },
        RenderMode::Kustomize if kustomization => Some(Renderer::Kustomize),
        RenderMode::Kustomize => {
            return Err(not(format!(
                "--render kustomize needs a directory holding one of {}; use --render auto \
                 or none for plain manifests",
                kustomize::FILES.join(", ")
            ))
            .into());
        }
        RenderMode::Helm if chart => Some(Renderer::Helm),
        RenderMode::Helm => {
            return Err(not(
                "--render helm needs a chart directory holding Chart.yaml; use --render auto \
                 or none for plain manifests"
                    .into(),
            )
            .into());
        }
    })
}

/// Refuses render flags that cannot apply to `path`, a file (not a directory): an explicit
/// `--render kustomize|helm`, `--values`, `--release`.
pub(crate) fn refuse_for_files(path: &str, opts: &RenderOptions) -> Result<(), SourceError> {
    let what = match opts.mode {
        RenderMode::Kustomize => "--render kustomize",
        RenderMode::Helm => "--render helm",
        _ if !opts.values.is_empty() || opts.release.is_some() => "--values and --release",
        _ => return Ok(()),
    };
    Err(RenderError::NotRenderable {
        path: path.to_string(),
        message: format!("{what} need a directory (a Kustomize overlay or a Helm chart)"),
    }
    .into())
}

/// Renders `job` if `opts` say it is rendered; `None` when its files are read as they are.
pub(crate) fn render(
    job: &Job<'_>,
    opts: &RenderOptions,
    load: &LoadOptions,
) -> Result<Option<Output>, SourceError> {
    let renderer = renderer_for(job.tree, &job.dir, &job.label, opts.mode)?;
    if renderer != Some(Renderer::Helm) && (!opts.values.is_empty() || opts.release.is_some()) {
        return Err(RenderError::NotRenderable {
            path: job.label.clone(),
            message: "--values and --release apply to a Helm chart, and it is not rendered \
                      with Helm (see --render)"
                .into(),
        }
        .into());
    }
    let Some(renderer) = renderer else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix("daemonsync-render-")
        .tempdir()
        .map_err(|e| SourceError::Io {
            path: std::env::temp_dir().display().to_string(),
            source: e,
        })?;
    let mut export = Export::new(scratch.path().join("tree"), &load.limits)?;
    let sandbox = exec::Sandbox {
        path: opts.tools_path(),
        scratch: scratch.path().to_path_buf(),
        cwd: export.dest.clone(),
        timeout: opts.timeout,
    };
    sandbox.prepare().map_err(|e| SourceError::Io {
        path: scratch.path().display().to_string(),
        source: e,
    })?;
    let (program, args, what, tool) = match renderer {
        Renderer::Kustomize => kustomize_command(job, opts, load, &mut export, &sandbox)?,
        Renderer::Helm => helm_command(job, opts, load, &mut export, &sandbox)?,
    };
    let cap = load.limits.max_file_bytes;
    let out = exec::run(&sandbox, &program, &args, &what, cap)?;
    let text =
        String::from_utf8(out.stdout).map_err(|_| RenderError::NotText { what: what.clone() })?;
    tracing::debug!(
        path = %job.label,
        tool = %tool,
        bytes = text.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "rendered"
    );
    Ok(Some(Output {
        text,
        info: RenderInfo {
            renderer,
            tool,
            path: job.label.clone(),
        },
        notes: export.notes,
    }))
}

/// A program, its arguments, how errors name the run, and the tool with its version.
type Command = (PathBuf, Vec<OsString>, String, String);

fn kustomize_command(
    job: &Job<'_>,
    opts: &RenderOptions,
    load: &LoadOptions,
    export: &mut Export<'_>,
    sandbox: &exec::Sandbox,
) -> Result<Command, SourceError> {
    let needs = kustomize::needs(
        job.tree,
        &job.dir,
        opts.allow_remote_bases,
        opts.enable_helm,
        &load.limits,
    )?;
    for dir in &needs.dirs {
        export.dir(job.tree, dir)?;
    }
    let mut flags: Vec<OsString> = vec![
        "--load-restrictor".into(),
        "LoadRestrictionsRootOnly".into(),
    ];
    if opts.enable_helm {
        flags.push("--enable-helm".into());
    }
    flags.push(export.path_of(&job.dir).into_os_string());
    if let Some(kustomize) = sandbox.find("kustomize") {
        let version = tool_version(sandbox, &kustomize, &["version"], parse_version);
        let mut args: Vec<OsString> = vec!["build".into()];
        args.extend(flags);
        let what = format!("kustomize build {}", job.label);
        return Ok((kustomize, args, what, format!("kustomize {version}")));
    }
    let Some(kubectl) = sandbox.find("kubectl") else {
        return Err(RenderError::MissingBinary {
            path: job.label.clone(),
            renderer: Renderer::Kustomize,
            missing: "neither kustomize nor kubectl is on PATH; install kubectl, which embeds \
                      kustomize (https://kubernetes.io/docs/tasks/tools/), or kustomize \
                      (https://kubectl.docs.kubernetes.io/installation/kustomize/)"
                .into(),
        }
        .into());
    };
    let version = tool_version(
        sandbox,
        &kubectl,
        &["version", "--client", "-o", "json"],
        |out| {
            serde_json::from_str::<serde_json::Value>(out)
                .ok()?
                .get("kustomizeVersion")?
                .as_str()
                .and_then(parse_version)
        },
    );
    let mut args: Vec<OsString> = vec!["kustomize".into()];
    args.extend(flags);
    let what = format!("kubectl kustomize {}", job.label);
    Ok((
        kubectl,
        args,
        what,
        format!("kustomize {version} via kubectl"),
    ))
}

fn helm_command(
    job: &Job<'_>,
    opts: &RenderOptions,
    load: &LoadOptions,
    export: &mut Export<'_>,
    sandbox: &exec::Sandbox,
) -> Result<Command, SourceError> {
    let chart = helm::chart(job.tree, &job.dir, &load.limits)?;
    export.dir(job.tree, &job.dir)?;
    let values_dir = sandbox.scratch.join("values");
    let mut values = Vec::new();
    for (i, given) in opts.values.iter().enumerate() {
        let refused = |message: &str| RenderError::Values {
            path: given.clone(),
            message: message.to_string(),
        };
        let Some(path) = export::join(&[], given).filter(|p| !p.is_empty()) else {
            return Err(refused(
                "must be a path relative to the repository root (with --repo) or the working \
                 directory (with --manifests), without '..' above it",
            )
            .into());
        };
        match job.values.kind(&path)? {
            Kind::File => {}
            Kind::Missing => return Err(refused("no such file").into()),
            _ => return Err(refused("not a file").into()),
        }
        let name = path.last().cloned().unwrap_or_default();
        let to = values_dir.join(format!("{i}-{name}"));
        export.file_to(job.values, &path, &to)?;
        values.push(to);
    }
    let Some(helm) = sandbox.find("helm") else {
        return Err(RenderError::MissingBinary {
            path: job.label.clone(),
            renderer: Renderer::Helm,
            missing: "helm is not on PATH; install Helm 3 (https://helm.sh/docs/intro/install/)"
                .into(),
        }
        .into());
    };
    let version = tool_version(sandbox, &helm, &["version", "--short"], parse_version);
    let release = opts.release.clone().unwrap_or(chart.name);
    let kube_version = load.version();
    let mut args: Vec<OsString> = vec![
        "template".into(),
        release.clone().into(),
        export.path_of(&job.dir).into_os_string(),
        "--namespace".into(),
        load.default_namespace.clone().into(),
        "--kube-version".into(),
        format!("v{kube_version}").into(),
    ];
    for v in values {
        args.push("--values".into());
        args.push(v.into_os_string());
    }
    let what = format!("helm template {release} {}", job.label);
    Ok((helm, args, what, format!("helm {version}")))
}

/// `v5.5.0` out of a tool's version output (`v5.5.0`, `{Version:kustomize/v4.5.7 …}`,
/// `v3.16.2+g13654a5`).
fn parse_version(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let start = (0..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i] == b'v' && bytes[i + 1].is_ascii_digit())?;
    let rest = &text[start + 1..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    Some(format!("v{}", rest[..end].trim_end_matches('.')))
}

/// The version of a tool (asked once per program and process), or `(version unknown)`.
fn tool_version(
    sandbox: &exec::Sandbox,
    program: &Path,
    args: &[&str],
    parse: impl Fn(&str) -> Option<String>,
) -> String {
    static SEEN: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);
    if let Some(v) = SEEN
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_default()
        .get(program)
    {
        return v.clone();
    }
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let what = format!("{} {}", program.display(), args.len());
    let version = exec::run(sandbox, program, &args, &what, 1 << 20)
        .ok()
        .and_then(|o| parse(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or_else(|| "(version unknown)".into());
    SEEN.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_default()
        .insert(program.to_path_buf(), version.clone());
    version
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_as_tools_print_them() {
        assert_eq!(parse_version("v5.5.0\n").as_deref(), Some("v5.5.0"));
        assert_eq!(
            parse_version("{Version:kustomize/v4.5.7 GitCommit:56d82a8 BuildDate:…}").as_deref(),
            Some("v4.5.7")
        );
        assert_eq!(
            parse_version("v3.16.2+g13654a5").as_deref(),
            Some("v3.16.2")
        );
        assert_eq!(parse_version("version unknown"), None);
    }
}
