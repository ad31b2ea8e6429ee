//! Local files and directories (`--manifests PATH...`).

use super::render::export::DirTree;
use super::render::{self, RenderOptions};
use super::{Rendered, Source, SourceError, is_manifest_name, load_files};
use crate::manifest::{Limits, LoadOptions, ReadBudget};
use git2::{ObjectType, Oid};
use std::fs;
use std::path::{Path, PathBuf};

/// Manifests named on the command line: one or more local files or directories, read in the
/// order given (a plain path, or a repository's work tree).
///
/// Directories are walked recursively in sorted order, skipping hidden entries, taking
/// `*.yaml`, `*.yml` and `*.json`. Symlinks to files are followed only when their target stays
/// inside that directory; symlinks to directories are not followed. Files named explicitly are
/// read whatever their extension.
///
/// A directory that is a Kustomize overlay or a Helm chart is rendered instead, as `render`
/// says: it is copied (with the directories it needs, contained in the working directory, see
/// [`RenderOptions::working_dir`]) and rendered in a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSource {
    /// The paths, as given.
    pub paths: Vec<PathBuf>,
    /// How directories that are overlays or charts are rendered (`--render`).
    pub render: RenderOptions,
}

impl LocalSource {
    /// A source reading `paths`.
    pub fn new<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> Self {
        LocalSource {
            paths: paths.into_iter().map(Into::into).collect(),
            render: RenderOptions::default(),
        }
    }

    /// The same source rendering as `render` says.
    pub fn with_render(mut self, render: RenderOptions) -> Self {
        self.render = render;
        self
    }

    /// Renders `path` if it is an overlay or a chart (as `self.render` says).
    fn render_path(
        &self,
        path: &Path,
        opts: &LoadOptions,
    ) -> Result<Option<render::Output>, SourceError> {
        if !path.is_dir() {
            render::refuse_for_files(&path.display().to_string(), &self.render)?;
            return Ok(None);
        }
        if self.render.mode == render::RenderMode::None
            && self.render.values.is_empty()
            && self.render.release.is_none()
        {
            return Ok(None);
        }
        // Contained in the working directory when the path is inside it (an overlay's
        // `../../base` is found), else in the directory itself.
        let wd = DirTree::new(&self.render.working_dir()?)?;
        let dir = DirTree::new(path)?;
        let (tree, components) = match dir.root.strip_prefix(&wd.root) {
            Ok(rel) => {
                let components = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                (DirTree::new(&wd.root)?, components)
            }
            Err(_) => (dir, Vec::new()),
        };
        let job = render::Job {
            tree: &tree,
            dir: components,
            label: path.display().to_string(),
            values: &wd,
        };
        render::render(&job, &self.render, opts)
    }

    /// Lists and reads the manifest files: (label, text), in order.
    pub fn read_files(&self, limits: &Limits) -> Result<Vec<(String, String)>, SourceError> {
        read_paths(&self.paths, limits)
    }
}

/// Reads the manifest files of `paths`, in order: each directory walked (symlinks confined to
/// it), each file named explicitly read whatever its extension; one file count and one byte
/// budget for them all.
fn read_paths(paths: &[PathBuf], limits: &Limits) -> Result<Vec<(String, String)>, SourceError> {
    let mut files = Vec::new();
    for root in paths {
        let meta = fs::metadata(root).map_err(|e| io_err(root, e))?;
        if meta.is_dir() {
            let canon = fs::canonicalize(root).map_err(|e| io_err(root, e))?;
            walk(root, &canon, &mut files, limits)?;
        } else if meta.is_file() {
            push_file(&mut files, root.clone(), limits)?;
        } else {
            return Err(not_a_file(root));
        }
    }
    let mut budget = ReadBudget::new(limits);
    let mut out = Vec::with_capacity(files.len());
    for path in files {
        let label = path.display().to_string();
        let (bytes, size) = budget.read_capped(&path).map_err(|e| io_err(&path, e))?;
        budget
            .admit(size)
            .map_err(|o| SourceError::overrun(&label, o))?;
        let text = String::from_utf8(bytes).map_err(|_| SourceError::NotUtf8 {
            file: label.clone(),
        })?;
        out.push((label, text));
    }
    Ok(out)
}

fn not_a_file(path: &Path) -> SourceError {
    SourceError::NotAFile {
        path: path.display().to_string(),
    }
}

fn push_file(files: &mut Vec<PathBuf>, path: PathBuf, limits: &Limits) -> Result<(), SourceError> {
    if files.len() >= limits.max_files {
        return Err(SourceError::TooManyFiles {
            path: path.display().to_string(),
            limit: limits.max_files,
        });
    }
    files.push(path);
    Ok(())
}

/// `local:` and a digest of the file names and contents.
pub fn content_revision(files: &[(String, String)]) -> String {
    let mut buf = Vec::new();
    for (label, text) in files {
        buf.extend_from_slice(label.as_bytes());
        buf.push(0);
        buf.extend_from_slice(text.len().to_string().as_bytes());
        buf.push(0);
        buf.extend_from_slice(text.as_bytes());
    }
    let digest = Oid::hash_object(ObjectType::Blob, &buf)
        .map(|o| o.to_string())
        .unwrap_or_default();
    format!("local:{digest}")
}

impl Source for LocalSource {
    fn describe(&self) -> String {
        self.paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn load(&self, opts: &LoadOptions) -> Result<Rendered, SourceError> {
        let mut plain = Vec::new();
        let mut rendered = Vec::new();
        let mut notes = Vec::new();
        let mut rendered_by = Vec::new();
        for path in &self.paths {
            match self.render_path(path, opts)? {
                Some(out) => {
                    rendered.push((out.info.label(), out.text));
                    notes.extend(out.notes);
                    rendered_by.push(out.info);
                }
                None => plain.push(path.clone()),
            }
        }
        let mut files = read_paths(&plain, &opts.limits)?;
        files.extend(rendered);
        let manifests = load_files(&files, &self.describe(), opts)?;
        Ok(Rendered {
            revision: content_revision(&files),
            manifests,
            files: files.len(),
            notes,
            rendered_by,
        })
    }
}

fn io_err(path: &Path, source: std::io::Error) -> SourceError {
    SourceError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Collects the manifest files under `dir`, depth first in sorted order. Iterative, with a
/// depth limit. Names are bytes: a file whose name is not UTF-8 is read like any other (its
/// label shows it lossily). Symlinks to files are followed only when their target stays inside
/// `root` (the canonical directory named on the command line); symlinks to directories are
/// not followed. A manifest-named entry that is not a regular file is an error, never skipped.
fn walk(
    dir: &Path,
    root: &Path,
    files: &mut Vec<PathBuf>,
    limits: &Limits,
) -> Result<(), SourceError> {
    let mut stack = vec![(0usize, sorted_entries(dir)?.into_iter())];
    while let Some((depth, entries)) = stack.last_mut() {
        let depth = *depth;
        let Some(path) = entries.next() else {
            stack.pop();
            continue;
        };
        let Some(name) = path.file_name().map(|n| n.as_encoded_bytes()) else {
            continue;
        };
        if name.first() == Some(&b'.') {
            continue;
        }
        let meta = fs::symlink_metadata(&path).map_err(|e| io_err(&path, e))?;
        if meta.is_dir() {
            if depth + 1 > limits.max_dir_depth {
                return Err(SourceError::TooDeep {
                    path: path.display().to_string(),
                    limit: limits.max_dir_depth,
                });
            }
            let entries = sorted_entries(&path)?.into_iter();
            stack.push((depth + 1, entries));
            continue;
        }
        if !is_manifest_name(name) {
            continue;
        }
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).map_err(|e| io_err(&path, e))?;
            let escapes = || SourceError::SymlinkEscapes {
                link: path.display().to_string(),
                target: target.display().to_string(),
            };
            let resolved = fs::canonicalize(&path).map_err(|_| escapes())?;
            if !resolved.starts_with(root) {
                return Err(escapes());
            }
            let target_meta = fs::metadata(&resolved).map_err(|e| io_err(&path, e))?;
            if target_meta.is_dir() {
                continue;
            }
            if !target_meta.is_file() {
                return Err(not_a_file(&path));
            }
        } else if !meta.is_file() {
            return Err(not_a_file(&path));
        }
        push_file(files, path, limits)?;
    }
    Ok(())
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| io_err(dir, e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| io_err(dir, e))?;
    entries.sort();
    Ok(entries)
}
