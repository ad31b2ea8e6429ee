//! The layers ARCHITECTURE.md draws hold: no file imports, through any chain of `use`, a file
//! that imports it back; the manifest reader never reaches up into the planner, the cluster
//! backends never into the executor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The source roots of the three crates.
const ROOTS: [&str; 3] = [
    "src",
    "crates/daemonsync-core/src",
    "crates/daemonsync-sim/src",
];

/// A crate's files by module path (`plan::spec` → `plan/spec.rs`).
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("source directory").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("under the root");
                let mut parts: Vec<String> = rel
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                out.insert(parts, path);
            }
        }
    }
    out
}

/// The paths a `use` tree names: `a::{b, c::{d}}` → `a::b`, `a::c::d`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).trim().to_string()];
    };
    let (prefix, inner) = (
        &tree[..open],
        &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())],
    );
    let (mut items, mut depth, mut current) = (Vec::new(), 0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if ch == ',' && depth == 0 {
            items.push(std::mem::take(&mut current));
        } else {
            current.push(ch);
        }
    }
    items.push(current);
    items
        .iter()
        .filter(|i| !i.trim().is_empty())
        .flat_map(|i| expand(i).into_iter().map(|p| format!("{prefix}{p}")))
        .collect()
}

/// The file's text without its `#[cfg(test)] mod tests` and its line comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("readable source");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The trees of the file's `use` statements (`pub use` and those inside functions too).
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        let line = line.trim();
        let start = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| line.strip_prefix(p));
        let text = match (&mut current, start) {
            (Some(stmt), _) => {
                stmt.push(' ');
                stmt.push_str(line);
                stmt.clone()
            }
            (None, Some(rest)) => rest.to_string(),
            (None, None) => continue,
        };
        match text.find(';') {
            Some(end) => {
                out.push(text[..end].to_string());
                current = None;
            }
            None => current = Some(text),
        }
    }
    out
}

/// The crate's files each file imports from (`use crate::…`, `use super::…`).
fn imports(root: &Path) -> BTreeMap<PathBuf, Vec<PathBuf>> {
    let mods = modules(root);
    let resolve = |path: &[String]| {
        (0..=path.len())
            .rev()
            .find_map(|n| mods.get(&path[..n]).cloned())
    };
    let mut graph = BTreeMap::new();
    for (module, file) in &mods {
        let is_dir_module = file
            .file_stem()
            .is_some_and(|s| s == "mod" || s == "lib" || s == "main");
        let mut deps = Vec::new();
        for stmt in use_statements(&code(file)) {
            for path in expand(&stmt) {
                let segs: Vec<String> = path
                    .split("::")
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                let absolute: Vec<String> = match segs.first().map(String::as_str) {
                    Some("crate") => segs[1..].to_vec(),
                    Some("super") => {
                        let mut base = module.clone();
                        if !is_dir_module {
                            base.pop();
                        }
                        let ups = segs.iter().take_while(|s| *s == "super").count();
                        for _ in 1..ups {
                            base.pop();
                        }
                        base.extend(segs[ups..].iter().cloned());
                        base
                    }
                    _ => continue,
                };
                if let Some(target) = resolve(&absolute)
                    && &target != file
                    && !deps.contains(&target)
                {
                    deps.push(target);
                }
            }
        }
        graph.insert(file.clone(), deps);
    }
    graph
}

/// One cycle of the graph, if there is any.
fn cycle(graph: &BTreeMap<PathBuf, Vec<PathBuf>>) -> Option<Vec<PathBuf>> {
    fn visit(
        node: &PathBuf,
        graph: &BTreeMap<PathBuf, Vec<PathBuf>>,
        state: &mut BTreeMap<PathBuf, bool>,
        stack: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        state.insert(node.clone(), false);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next) {
                Some(false) => {
                    let from = stack.iter().position(|n| n == next).unwrap_or_default();
                    return Some(stack[from..].to_vec());
                }
                Some(true) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.clone(), true);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node)
            && let Some(c) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    for root in ROOTS {
        let graph = imports(&workspace().join(root));
        assert!(graph.len() > 10, "{root} has its files");
        let edges: usize = graph.values().map(Vec::len).sum();
        assert!(
            edges > graph.len(),
            "{root}: the imports are read ({edges} edges)"
        );
        if let Some(c) = cycle(&graph) {
            let names: Vec<String> = c.iter().map(|p| p.display().to_string()).collect();
            panic!("import cycle in {root}: {}", names.join(" → "));
        }
    }
}

#[test]
fn the_cycle_check_sees_a_cycle() {
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let graph = BTreeMap::from([(a.clone(), vec![b.clone()]), (b.clone(), vec![a.clone()])]);
    assert_eq!(cycle(&graph), Some(vec![a, b]));
    let core = imports(&workspace().join("crates/daemonsync-core/src"));
    let context = workspace().join("crates/daemonsync-core/src/plan/context.rs");
    let spec = workspace().join("crates/daemonsync-core/src/plan/spec.rs");
    assert!(core[&context].contains(&spec), "super:: paths resolve");
    assert_eq!(
        expand("crate::plan::{self, spec::{A, B as C}, D}"),
        [
            "crate::plan::self",
            "crate::plan::spec::A",
            "crate::plan::spec::B",
            "crate::plan::D"
        ]
    );
}

/// Files under `dir` (relative to the workspace) that name `forbidden` anywhere in their code.
fn naming(dir: &str, forbidden: &str) -> Vec<String> {
    let root = workspace().join(dir);
    modules(&root)
        .values()
        .filter(|f| code(f).contains(forbidden))
        .map(|f| f.display().to_string())
        .collect()
}

#[test]
fn manifest_reads_nothing_of_the_planner() {
    let up = naming("crates/daemonsync-core/src/manifest", "crate::plan");
    assert!(up.is_empty(), "manifest reaches up into plan: {up:?}");
}

#[test]
fn cluster_backends_read_nothing_of_the_executor() {
    let up = naming("src/cluster", "crate::apply");
    assert!(up.is_empty(), "cluster reaches up into apply: {up:?}");
}
