//! An arbitrary small tree (names as bytes, not always UTF-8; nesting; symlinks with
//! arbitrary targets; submodule entries; blobs, some of them valid manifests) committed to a
//! temporary bare repository, then read through `GitSource::render` at an arbitrary subpath.
//!
//! Trees are written either through git2's tree builder, which refuses names such as `..` or
//! `a/b`, or as raw tree objects, which refuse nothing: a hostile server can send those.
#![no_main]

use arbitrary::Arbitrary;
use daemonsync::manifest::LoadOptions;
use daemonsync::source::GitSource;
use git2::{ObjectType, Oid, Repository, Signature};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

#[derive(Arbitrary, Debug)]
enum Entry {
    Blob {
        name: Vec<u8>,
        content: Vec<u8>,
    },
    Manifest {
        name: Vec<u8>,
        which: u8,
    },
    Link {
        name: Vec<u8>,
        target: Vec<u8>,
    },
    Dir {
        name: Vec<u8>,
        entries: Vec<Entry>,
    },
    Submodule {
        name: Vec<u8>,
    },
    /// An entry whose mode and id are arbitrary: a missing object, a blob called a tree.
    Odd {
        name: Vec<u8>,
        mode: u32,
        id: [u8; 20],
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    root: Vec<Entry>,
    subpath: String,
    raw: bool,
}

/// A bare repository in memory-backed storage where there is one, replaced every few hundred
/// inputs so that loose objects do not pile up.
struct Scratch {
    _dir: tempfile::TempDir,
    repo: Repository,
    uses: usize,
}

impl Scratch {
    fn new() -> Scratch {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::tempdir_in(shm).unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let repo = Repository::init_bare(dir.path()).unwrap();
        Scratch {
            _dir: dir,
            repo,
            uses: 0,
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

fn manifest(which: u8) -> String {
    let name = ["agent", "logs", "net"][usize::from(which % 3)];
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}}}\nspec:\n  \
         selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: \
         {name}}}}}\n    spec: {{containers: [{{name: c, image: 'i:{which}'}}]}}\n"
    )
}

/// Writes `entries` as a tree; `None` when the tree builder refuses it.
fn write_tree(repo: &Repository, entries: &[Entry], raw: bool, depth: usize) -> Option<Oid> {
    let mut items: Vec<(Vec<u8>, i32, Oid)> = Vec::new();
    for e in entries {
        let item = match e {
            Entry::Blob { name, content } => (name.clone(), 0o100644, repo.blob(content).ok()?),
            Entry::Manifest { name, which } => (
                name.clone(),
                0o100644,
                repo.blob(manifest(*which).as_bytes()).ok()?,
            ),
            Entry::Link { name, target } => (name.clone(), 0o120000, repo.blob(target).ok()?),
            Entry::Dir { name, entries } => {
                if depth > 80 {
                    return None;
                }
                let id = write_tree(repo, entries, raw, depth + 1)?;
                (name.clone(), 0o040000, id)
            }
            Entry::Submodule { name } => (name.clone(), 0o160000, Oid::from_bytes(&[7; 20]).ok()?),
            Entry::Odd { name, mode, id } => (
                name.clone(),
                (*mode & 0o177777) as i32,
                Oid::from_bytes(id).ok()?,
            ),
        };
        items.push(item);
    }
    if raw {
        // Raw tree object: "<mode in octal> <name>\0<20-byte id>" per entry, as given.
        let mut bytes = Vec::new();
        for (name, mode, id) in &items {
            bytes.extend_from_slice(format!("{mode:o} ").as_bytes());
            bytes.extend(name.iter().copied().filter(|&b| b != 0));
            bytes.push(0);
            bytes.extend_from_slice(id.as_bytes());
        }
        repo.odb().ok()?.write(ObjectType::Tree, &bytes).ok()
    } else {
        let mut tb = repo.treebuilder(None).ok()?;
        for (name, mode, id) in &items {
            tb.insert(name.as_slice(), *id, *mode).ok()?;
        }
        tb.write().ok()
    }
}

fn run(repo: &Repository, input: &Input) {
    let Some(tree) = write_tree(repo, &input.root, input.raw, 0) else {
        return;
    };
    // A raw tree may not parse as one: then there is nothing to commit.
    let Ok(tree) = repo.find_tree(tree) else {
        return;
    };
    let sig = Signature::new("f", "f@example.com", &git2::Time::new(0, 0)).unwrap();
    let Ok(commit) = repo.commit(None, &sig, &sig, "fuzz", &tree, &[]) else {
        return;
    };
    let source = GitSource::new(
        repo.path().display().to_string(),
        commit.to_string(),
        input.subpath.clone(),
    );
    match source.render(repo, &commit.to_string(), &LoadOptions::default()) {
        Ok(rendered) => assert!(rendered.files > 0, "rendered without reading a file"),
        // Every error renders.
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

fuzz_target!(|input: Input| {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.as_ref().is_none_or(|s| s.uses >= 500) {
            *s = Some(Scratch::new());
        }
        let scratch = s.as_mut().unwrap();
        scratch.uses += 1;
        run(&scratch.repo, &input);
    });
});
