//! Reading manifest files from a commit's tree, blob by blob, confined to the repository.

use super::{SourceError, is_manifest_name};
use crate::manifest::{Limits, ReadBudget};
use git2::{ObjectType, Oid, Repository, Tree};

pub(crate) const SYMLINK_MODE: i32 = 0o120000;
pub(crate) const SUBMODULE_MODE: i32 = 0o160000;
const MAX_SYMLINK_HOPS: usize = 40;

/// Splits a repository subpath into components, refusing absolute paths and `..`.
pub(crate) fn subpath_components(path: &str) -> Result<Vec<String>, SourceError> {
    let refused = || SourceError::PathNotAllowed {
        path: path.to_string(),
    };
    if path.starts_with('/') || path.starts_with('\\') || std::path::Path::new(path).is_absolute() {
        return Err(refused());
    }
    let mut out = Vec::new();
    // No name in a git tree holds a NUL byte (and git2 cannot even look one up).
    if path.contains('\0') {
        return Err(refused());
    }
    for c in path.split(['/', '\\']) {
        match c {
            "" | "." => {}
            ".." => return Err(refused()),
            c => out.push(c.to_string()),
        }
    }
    Ok(out)
}

/// What a path in the tree resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    Tree(Oid),
    Blob(Oid),
    Submodule,
    Missing,
}

/// Files read from a tree: (label, text) in sorted path order, plus notes.
#[derive(Debug)]
pub(crate) struct TreeFiles {
    pub files: Vec<(String, String)>,
    pub notes: Vec<String>,
    pub budget: ReadBudget,
}

impl TreeFiles {
    pub(crate) fn new(limits: &Limits) -> Self {
        TreeFiles {
            files: Vec::new(),
            notes: Vec::new(),
            budget: ReadBudget::new(limits),
        }
    }
}

pub(crate) struct TreeReader<'r> {
    repo: &'r Repository,
    root: Tree<'r>,
    limits: &'r Limits,
}

impl<'r> TreeReader<'r> {
    pub(crate) fn new(repo: &'r Repository, root: Tree<'r>, limits: &'r Limits) -> Self {
        TreeReader { repo, root, limits }
    }

    fn git_err(&self, e: git2::Error) -> SourceError {
        SourceError::Repository {
            url: super::redact(&self.repo.path().display().to_string()),
            message: super::redact(e.message()),
        }
    }

    /// Resolves `components` from the root, following symlinks that stay inside the repository.
    /// `link` names the symlink being followed, for errors.
    pub(crate) fn lookup(&self, components: &[String]) -> Result<Found, SourceError> {
        self.lookup_hops(components, 0, None)
    }

    fn lookup_hops(
        &self,
        components: &[String],
        hops: usize,
        via: Option<(&str, &str)>,
    ) -> Result<Found, SourceError> {
        let mut tree_id = self.root.id();
        for (i, name) in components.iter().enumerate() {
            let tree = self.repo.find_tree(tree_id).map_err(|e| self.git_err(e))?;
            // A symlink's target may hold a NUL byte; no entry is named so (and git2 panics
            // looking one up).
            if name.contains('\0') {
                return Ok(Found::Missing);
            }
            let Some(entry) = tree.get_name(name) else {
                return Ok(Found::Missing);
            };
            let last = i + 1 == components.len();
            let mode = entry.filemode();
            if mode == SYMLINK_MODE {
                let link = components[..=i].join("/");
                let odb = self.repo.odb().map_err(|e| self.git_err(e))?;
                let (size, _) = odb.read_header(entry.id()).map_err(|e| self.git_err(e))?;
                if size as u64 > self.limits.max_link_bytes {
                    return Err(SourceError::LinkTooLong {
                        link,
                        size: size as u64,
                        limit: self.limits.max_link_bytes,
                    });
                }
                let blob = self
                    .repo
                    .find_blob(entry.id())
                    .map_err(|e| self.git_err(e))?;
                let target = String::from_utf8_lossy(blob.content()).into_owned();
                let escapes = || SourceError::SymlinkEscapes {
                    link: via.map_or(link.clone(), |(l, _)| l.to_string()),
                    target: via.map_or(target.clone(), |(_, t)| t.to_string()),
                };
                if hops >= MAX_SYMLINK_HOPS
                    || target.starts_with('/')
                    || std::path::Path::new(&target).is_absolute()
                {
                    return Err(escapes());
                }
                let mut resolved: Vec<String> = components[..i].to_vec();
                for c in target.split('/') {
                    match c {
                        "" | "." => {}
                        ".." => {
                            if resolved.pop().is_none() {
                                return Err(escapes());
                            }
                        }
                        c => resolved.push(c.to_string()),
                    }
                }
                resolved.extend_from_slice(&components[i + 1..]);
                let via = via.unwrap_or((&link, &target));
                return self.lookup_hops(&resolved, hops + 1, Some(via));
            }
            if mode == SUBMODULE_MODE || entry.kind() == Some(ObjectType::Commit) {
                return Ok(Found::Submodule);
            }
            match entry.kind() {
                Some(ObjectType::Tree) => tree_id = entry.id(),
                Some(ObjectType::Blob) if last => return Ok(Found::Blob(entry.id())),
                _ => return Ok(Found::Missing),
            }
        }
        Ok(Found::Tree(tree_id))
    }

    /// Reads every manifest file under the tree `id` (labelled from `dir`), depth first in
    /// sorted order. Iterative, with a depth limit: a hostile tree thousands of levels deep
    /// costs neither stack nor memory.
    pub(crate) fn read_dir(
        &self,
        id: Oid,
        dir: &[String],
        out: &mut TreeFiles,
    ) -> Result<(), SourceError> {
        // One frame per open directory: its path and its remaining entries (ids, not objects).
        let mut stack = vec![(dir.to_vec(), self.sorted_entries(id)?.into_iter())];
        while let Some((path, entries)) = stack.last_mut() {
            let Some((name_bytes, mode, kind, oid)) = entries.next() else {
                stack.pop();
                continue;
            };
            if name_bytes.first() == Some(&b'.') {
                continue;
            }
            let name = String::from_utf8_lossy(&name_bytes).into_owned();
            let mut entry_path = path.clone();
            entry_path.push(name);
            let label = entry_path.join("/");
            if mode == SUBMODULE_MODE || kind == Some(ObjectType::Commit) {
                out.notes.push(format!(
                    "{label}: submodule not followed (daemonsync reads only this repository)"
                ));
            } else if mode == SYMLINK_MODE {
                if !is_manifest_name(&name_bytes) {
                    continue; // links to directories (or other files) are not followed
                }
                if entry_path
                    .iter()
                    .any(|c| c.contains(char::REPLACEMENT_CHARACTER))
                {
                    return Err(SourceError::SymlinkEscapes {
                        link: label,
                        target: "(a path that is not UTF-8)".into(),
                    });
                }
                match self.lookup(&entry_path)? {
                    Found::Blob(oid) => self.read_blob(oid, label, out)?,
                    Found::Missing => {
                        return Err(SourceError::PathNotFound {
                            path: label,
                            revision: "this commit (dangling symlink)".into(),
                        });
                    }
                    Found::Tree(_) | Found::Submodule => {}
                }
            } else {
                match kind {
                    Some(ObjectType::Tree) => {
                        if entry_path.len() > self.limits.max_dir_depth {
                            return Err(SourceError::TooDeep {
                                path: label,
                                limit: self.limits.max_dir_depth,
                            });
                        }
                        let entries = self.sorted_entries(oid)?.into_iter();
                        stack.push((entry_path, entries));
                    }
                    Some(ObjectType::Blob) if is_manifest_name(&name_bytes) => {
                        self.read_blob(oid, label, out)?
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A tree's entries (name bytes, mode, kind, id), sorted by name.
    #[allow(clippy::type_complexity)]
    pub(crate) fn sorted_entries(
        &self,
        id: Oid,
    ) -> Result<Vec<(Vec<u8>, i32, Option<ObjectType>, Oid)>, SourceError> {
        let tree = self.repo.find_tree(id).map_err(|e| self.git_err(e))?;
        let mut entries: Vec<_> = tree
            .iter()
            .map(|e| (e.name_bytes().to_vec(), e.filemode(), e.kind(), e.id()))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    /// The bytes of one blob, admitted through `budget` before its content is loaded.
    pub(crate) fn blob_bytes(
        &self,
        oid: Oid,
        label: &str,
        budget: &mut ReadBudget,
    ) -> Result<Vec<u8>, SourceError> {
        let odb = self.repo.odb().map_err(|e| self.git_err(e))?;
        let (size, _) = odb.read_header(oid).map_err(|e| self.git_err(e))?;
        budget
            .admit(size as u64)
            .map_err(|o| SourceError::overrun(label, o))?;
        let blob = self.repo.find_blob(oid).map_err(|e| self.git_err(e))?;
        Ok(blob.content().to_vec())
    }

    /// Reads one blob, enforcing the limits before its content is loaded.
    pub(crate) fn read_blob(
        &self,
        oid: Oid,
        label: String,
        out: &mut TreeFiles,
    ) -> Result<(), SourceError> {
        if out.files.len() >= self.limits.max_files {
            return Err(SourceError::TooManyFiles {
                path: label,
                limit: self.limits.max_files,
            });
        }
        let odb = self.repo.odb().map_err(|e| self.git_err(e))?;
        let (size, _) = odb.read_header(oid).map_err(|e| self.git_err(e))?;
        out.budget
            .admit(size as u64)
            .map_err(|o| SourceError::overrun(&label, o))?;
        let blob = self.repo.find_blob(oid).map_err(|e| self.git_err(e))?;
        let text =
            String::from_utf8(blob.content().to_vec()).map_err(|_| SourceError::NotUtf8 {
                file: label.clone(),
            })?;
        out.files.push((label, text));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::subpath_components;

    #[test]
    fn subpaths() {
        assert_eq!(subpath_components("").unwrap(), Vec::<String>::new());
        assert_eq!(subpath_components("./a//b/").unwrap(), vec!["a", "b"]);
        assert!(subpath_components("/etc").is_err());
        assert!(subpath_components("a/../../b").is_err());
        assert!(subpath_components("..").is_err());
        assert!(subpath_components("deploy\0").is_err());
    }
}
