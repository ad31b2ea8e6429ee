//! What a renderer may read, and copying it into the render's temporary directory.
//!
//! A renderer runs on files, so the directories it needs are written out first: from a
//! commit's tree (git; never the work tree) or from a directory on disk (`--manifests`). Both
//! are read through [`Tree`], with the rules every source follows: paths stay under the root
//! (no absolute path, no `..` above it), a symlink is followed only when its target stays
//! inside (else the render fails naming it), symlinks to directories and submodules are not
//! followed, and the files written count against the load's limits (file count, size of one
//! file, total bytes), checked before content is read.

use crate::manifest::{Limits, ReadBudget};
use crate::source::SourceError;
use crate::source::tree::{Found, SUBMODULE_MODE, SYMLINK_MODE, TreeReader};
use git2::ObjectType;
use std::path::{Path, PathBuf};

/// What a path in a [`Tree`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A directory.
    Dir,
    /// A regular file (or a symlink to one inside the tree).
    File,
    /// A symlink to a directory: not followed.
    DirLink,
    /// A submodule: not followed.
    Submodule,
    /// Nothing (or a dangling symlink).
    Missing,
}

/// A read-only view of a tree of files, paths given as components from its root.
pub(crate) trait Tree {
    /// What `path` is. A symlink whose target leaves the tree is an error naming it.
    fn kind(&self, path: &[String]) -> Result<Kind, SourceError>;
    /// The entries of the directory `dir`, sorted by name, each with its kind.
    fn list(&self, dir: &[String]) -> Result<Vec<(String, Kind)>, SourceError>;
    /// The bytes of the file `path`, admitted through `budget` before they are read.
    fn read(&self, path: &[String], budget: &mut ReadBudget) -> Result<Vec<u8>, SourceError>;
    /// How errors name `path`.
    fn label(&self, path: &[String]) -> String {
        path.join("/")
    }
}

/// A commit's tree.
pub(crate) struct GitTree<'a, 'r> {
    pub reader: &'a TreeReader<'r>,
}

impl Tree for GitTree<'_, '_> {
    fn kind(&self, path: &[String]) -> Result<Kind, SourceError> {
        Ok(match self.reader.lookup(path)? {
            Found::Tree(_) => Kind::Dir,
            Found::Blob(_) => Kind::File,
            Found::Submodule => Kind::Submodule,
            Found::Missing => Kind::Missing,
        })
    }

    fn list(&self, dir: &[String]) -> Result<Vec<(String, Kind)>, SourceError> {
        let Found::Tree(id) = self.reader.lookup(dir)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (name, mode, kind, _) in self.reader.sorted_entries(id)? {
            let name = String::from_utf8_lossy(&name).into_owned();
            let kind = if mode == SUBMODULE_MODE || kind == Some(ObjectType::Commit) {
                Kind::Submodule
            } else if mode == SYMLINK_MODE {
                let mut path = dir.to_vec();
                path.push(name.clone());
                match self.reader.lookup(&path)? {
                    Found::Blob(_) => Kind::File,
                    Found::Tree(_) => Kind::DirLink,
                    Found::Submodule => Kind::Submodule,
                    Found::Missing => Kind::Missing,
                }
            } else {
                match kind {
                    Some(ObjectType::Tree) => Kind::Dir,
                    Some(ObjectType::Blob) => Kind::File,
                    _ => Kind::Missing,
                }
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    fn read(&self, path: &[String], budget: &mut ReadBudget) -> Result<Vec<u8>, SourceError> {
        let label = self.label(path);
        match self.reader.lookup(path)? {
            Found::Blob(oid) => self.reader.blob_bytes(oid, &label, budget),
            _ => Err(SourceError::PathNotFound {
                path: label,
                revision: "this commit".into(),
            }),
        }
    }
}

/// A directory on disk; symlinks are followed only to targets under `root`.
pub(crate) struct DirTree {
    /// The canonical root.
    pub root: PathBuf,
}

impl DirTree {
    /// A tree rooted at `root` (made canonical).
    pub fn new(root: &Path) -> Result<DirTree, SourceError> {
        let root = std::fs::canonicalize(root).map_err(|e| SourceError::Io {
            path: root.display().to_string(),
            source: e,
        })?;
        Ok(DirTree { root })
    }

    fn path(&self, components: &[String]) -> PathBuf {
        let mut p = self.root.clone();
        p.extend(components);
        p
    }

    /// The kind of the file system entry at `p`, its symlinks checked against the root.
    fn kind_at(&self, p: &Path) -> Result<Kind, SourceError> {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            return Ok(Kind::Missing);
        };
        let label = || p.display().to_string();
        // Any component may be a link: where the path really leads must stay inside.
        let Ok(resolved) = std::fs::canonicalize(p) else {
            return Ok(Kind::Missing); // a dangling link
        };
        if !resolved.starts_with(&self.root) {
            return Err(SourceError::SymlinkEscapes {
                link: label(),
                target: std::fs::read_link(p).map_or_else(
                    |_| resolved.display().to_string(),
                    |t| t.display().to_string(),
                ),
            });
        }
        let target = std::fs::metadata(&resolved).map_err(|e| SourceError::Io {
            path: label(),
            source: e,
        })?;
        Ok(
            match (
                meta.file_type().is_symlink(),
                target.is_dir(),
                target.is_file(),
            ) {
                (true, true, _) => Kind::DirLink,
                (false, true, _) => Kind::Dir,
                (_, _, true) => Kind::File,
                _ => return Err(SourceError::NotAFile { path: label() }),
            },
        )
    }
}

impl Tree for DirTree {
    fn kind(&self, path: &[String]) -> Result<Kind, SourceError> {
        self.kind_at(&self.path(path))
    }

    fn list(&self, dir: &[String]) -> Result<Vec<(String, Kind)>, SourceError> {
        let at = self.path(dir);
        let io = |e| SourceError::Io {
            path: at.display().to_string(),
            source: e,
        };
        let mut names: Vec<String> = std::fs::read_dir(&at)
            .map_err(io)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let kind = self.kind_at(&at.join(&name))?;
                Ok((name, kind))
            })
            .collect()
    }

    fn read(&self, path: &[String], budget: &mut ReadBudget) -> Result<Vec<u8>, SourceError> {
        let p = self.path(path);
        if self.kind_at(&p)? != Kind::File {
            return Err(SourceError::NotAFile {
                path: p.display().to_string(),
            });
        }
        let (bytes, size) = budget.read_capped(&p).map_err(|e| SourceError::Io {
            path: p.display().to_string(),
            source: e,
        })?;
        budget
            .admit(size)
            .map_err(|o| SourceError::overrun(&p.display().to_string(), o))?;
        Ok(bytes)
    }

    fn label(&self, path: &[String]) -> String {
        self.path(path).display().to_string()
    }
}

/// Joins `rel` (a path as a kustomization or a flag writes it) to `base`, lexically: `None`
/// when it is absolute or climbs above the root.
pub(crate) fn join(base: &[String], rel: &str) -> Option<Vec<String>> {
    if rel.starts_with('/') || Path::new(rel).is_absolute() || rel.contains('\0') {
        return None;
    }
    let mut out = base.to_vec();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c.to_string()),
        }
    }
    Some(out)
}

/// Files written so far, against the load's limits.
pub(crate) struct Export<'a> {
    /// Where the tree is written.
    pub dest: PathBuf,
    limits: &'a Limits,
    budget: ReadBudget,
    files: usize,
    /// Directories written whole, so a directory inside one is not written twice.
    done: Vec<Vec<String>>,
    /// What was not followed (directory symlinks, submodules).
    pub notes: Vec<String>,
}

impl<'a> Export<'a> {
    /// An export into `dest` (created).
    pub fn new(dest: PathBuf, limits: &'a Limits) -> Result<Self, SourceError> {
        std::fs::create_dir_all(&dest).map_err(|e| io_err(&dest, e))?;
        Ok(Export {
            dest,
            limits,
            budget: ReadBudget::new(limits),
            files: 0,
            done: Vec::new(),
            notes: Vec::new(),
        })
    }

    /// Where `path` of the tree is written.
    pub fn path_of(&self, path: &[String]) -> PathBuf {
        let mut p = self.dest.clone();
        p.extend(path);
        p
    }

    /// Writes the directory `dir` of `tree`, everything under it, depth first. Iterative and
    /// depth-limited, as every reader of trees is.
    pub fn dir(&mut self, tree: &dyn Tree, dir: &[String]) -> Result<(), SourceError> {
        if self.done.iter().any(|d| dir.starts_with(d)) {
            return Ok(());
        }
        self.done.push(dir.to_vec());
        let mut stack = vec![dir.to_vec()];
        while let Some(at) = stack.pop() {
            let target = self.path_of(&at);
            std::fs::create_dir_all(&target).map_err(|e| io_err(&target, e))?;
            for (name, kind) in tree.list(&at)? {
                let mut path = at.clone();
                path.push(name);
                match kind {
                    Kind::Dir => {
                        if path.len() > self.limits.max_dir_depth {
                            return Err(SourceError::TooDeep {
                                path: tree.label(&path),
                                limit: self.limits.max_dir_depth,
                            });
                        }
                        stack.push(path);
                    }
                    Kind::File => self.file(tree, &path)?,
                    Kind::DirLink => self.notes.push(format!(
                        "{}: a symlink to a directory, not followed in the render's copy",
                        tree.label(&path)
                    )),
                    Kind::Submodule => self.notes.push(format!(
                        "{}: submodule not followed (daemonsync reads only this repository)",
                        tree.label(&path)
                    )),
                    Kind::Missing => {}
                }
            }
        }
        Ok(())
    }

    /// Writes one file of `tree` at the same path.
    pub fn file(&mut self, tree: &dyn Tree, path: &[String]) -> Result<(), SourceError> {
        self.file_to(tree, path, &self.path_of(path))
    }

    /// Writes the file `path` of `tree` to `to`.
    pub fn file_to(
        &mut self,
        tree: &dyn Tree,
        path: &[String],
        to: &Path,
    ) -> Result<(), SourceError> {
        if self.files >= self.limits.max_files {
            return Err(SourceError::TooManyFiles {
                path: tree.label(path),
                limit: self.limits.max_files,
            });
        }
        self.files += 1;
        let bytes = tree.read(path, &mut self.budget)?;
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
        }
        std::fs::write(to, bytes).map_err(|e| io_err(to, e))
    }
}

fn io_err(path: &Path, e: std::io::Error) -> SourceError {
    SourceError::Io {
        path: path.display().to_string(),
        source: e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn c(path: &str) -> Vec<String> {
        path.split('/').map(str::to_string).collect()
    }

    #[test]
    fn joins_stay_under_the_root() {
        assert_eq!(join(&c("overlays/prod"), "../../base"), Some(c("base")));
        assert_eq!(
            join(&c("overlays/prod"), "./patch.yaml"),
            Some(c("overlays/prod/patch.yaml"))
        );
        assert_eq!(join(&c("overlays/prod"), "../../../etc"), None);
        assert_eq!(join(&c("a"), "/etc/passwd"), None);
    }

    #[test]
    fn a_directory_is_copied_with_inside_links_and_an_outside_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("app/sub")).unwrap();
        std::fs::write(root.join("app/a.yaml"), "a: 1").unwrap();
        std::fs::write(root.join("app/.helmignore"), "*.bak").unwrap();
        std::fs::write(root.join("app/sub/b.yaml"), "b: 2").unwrap();
        std::fs::write(root.join("shared.yaml"), "s: 3").unwrap();
        symlink("../shared.yaml", root.join("app/shared.yaml")).unwrap();
        symlink("sub", root.join("app/dirlink")).unwrap();
        let tree = DirTree::new(&root).unwrap();
        let limits = Limits::default();
        let out = dir.path().join("out");
        let mut export = Export::new(out.clone(), &limits).unwrap();
        export.dir(&tree, &c("app")).unwrap();
        let read = |p: &str| std::fs::read_to_string(out.join(p)).unwrap();
        assert_eq!(read("app/a.yaml"), "a: 1");
        assert_eq!(read("app/.helmignore"), "*.bak");
        assert_eq!(read("app/sub/b.yaml"), "b: 2");
        assert_eq!(
            read("app/shared.yaml"),
            "s: 3",
            "an inside link is copied as its file"
        );
        assert!(!out.join("app/dirlink").exists());
        assert_eq!(export.notes.len(), 1, "{:?}", export.notes);

        std::fs::write(dir.path().join("secret"), "outside").unwrap();
        symlink("../../secret", root.join("app/leak.yaml")).unwrap();
        let mut export = Export::new(dir.path().join("out2"), &limits).unwrap();
        let err = export.dir(&tree, &c("app")).unwrap_err().to_string();
        assert!(
            err.contains("leak.yaml") && err.contains("outside the repository"),
            "{err}"
        );
    }

    #[test]
    fn the_copy_is_bounded_by_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("{i}.yaml")), "x: 1").unwrap();
        }
        let tree = DirTree::new(dir.path()).unwrap();
        let limits = Limits {
            max_files: 3,
            ..Limits::default()
        };
        let out = tempfile::tempdir().unwrap();
        let mut export = Export::new(out.path().to_path_buf(), &limits).unwrap();
        let err = export.dir(&tree, &[]).unwrap_err();
        assert!(
            matches!(err, SourceError::TooManyFiles { limit: 3, .. }),
            "{err}"
        );
    }
}
