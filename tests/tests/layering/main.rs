//! The code's map holds (docs/dev/design.md, "The map"): data flows one
//! way.
//!
//! - node/src: every module belongs to a layer of [`NODE_LAYERS`], and
//!   imports only from layers below its own (a new folder must take its
//!   place in the table); inside raft/, the same with [`RAFT_LAYERS`].
//! - No import circle between the modules (files) of node/src or of the
//!   Rust client (client/rust/src).
//!
//! An import is a `use` or an inline `crate::`/`super::` path in code that
//! is not test-only; a folder's `mod.rs` and the files under it do not
//! count as importing each other. Needs no cluster: it reads files only.
//! (The Python package has its own check: client/python/tests/test_layering.py.)

mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scan::{Crate, ModPath, read_crate};

/// node/src's layers, lowest first. A module imports only from layers
/// below its own, never from one beside it.
const NODE_LAYERS: &[&[&str]] = &[
    // Cross-cutting and leaves: the clock's trust, fault hooks, the
    // instruments (metrics and logs), which everything writes to.
    &["clock", "failpoints", "observe"],
    // What the operator set: flags, tuning, limits.
    &["config"],
    // The node's disk (RocksDB, the format stamp, durable directories,
    // free space) and its certificates.
    &["storage", "tls"],
    // The state machine: what a command does to the stored state.
    &["state"],
    // Consensus: the log, the peers, writes, reads, the cluster's life.
    &["raft"],
    // Domain errors as gRPC statuses, through the error table.
    &["status"],
    // The public gRPC services.
    &["api"],
    // One node assembled: ports, call middleware, admission, health.
    &["server"],
    // The binary's commands.
    &["cli"],
];

/// raft/'s stages, lowest first ("raft" alone is its `mod.rs`: the types
/// every stage shares).
const RAFT_LAYERS: &[&[&str]] = &[
    &["error", "payload"],
    &["codec"],
    &["log"],
    &["net"],
    &["reads"],
    &["writes"],
    &["life"],
    // The peer service dispatches into every stage.
    &["service"],
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// The layer of `unit` in `layers`, if it has one.
fn layer_of(layers: &[&[&str]], unit: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&unit))
}

/// Every import in `krate` between two units of `layers` under `scope`
/// that goes up or sideways, and every module under `scope` with no
/// layer; as readable lines.
fn layer_violations(krate: &Crate, scope: &[&str], layers: &[&[&str]]) -> Vec<String> {
    let unit = |m: &ModPath| -> Option<String> {
        let inside = m.len() > scope.len() && m.iter().zip(scope).all(|(a, b)| a == b);
        inside.then(|| m[scope.len()].clone())
    };
    let mut out = Vec::new();
    for (from, targets) in &krate.edges {
        let Some(u) = unit(from) else { continue };
        let Some(lu) = layer_of(layers, &u) else {
            out.push(format!(
                "{} ({}) is in no layer: give `{u}` its place in the table",
                name(from),
                krate.files[from].display()
            ));
            continue;
        };
        for to in targets {
            let Some(t) = unit(to) else { continue };
            if t == u {
                continue;
            }
            match layer_of(layers, &t) {
                Some(lt) if lt < lu => {}
                _ => out.push(format!(
                    "{} imports {}: `{u}` may not import `{t}` (same or higher layer)",
                    name(from),
                    name(to)
                )),
            }
        }
    }
    out
}

/// One import circle of `edges`, if there is one, as its modules in order.
fn find_cycle(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Option<Vec<ModPath>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        m: &ModPath,
        edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        marks: &mut BTreeMap<ModPath, Mark>,
        stack: &mut Vec<ModPath>,
    ) -> Option<Vec<ModPath>> {
        match marks.get(m) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let at = stack
                    .iter()
                    .position(|s| s == m)
                    .expect("open modules are on the stack");
                return Some([&stack[at..], std::slice::from_ref(m)].concat());
            }
            None => {}
        }
        marks.insert(m.clone(), Mark::Open);
        stack.push(m.clone());
        for to in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(to, edges, marks, stack) {
                return Some(c);
            }
        }
        stack.pop();
        marks.insert(m.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    edges.keys().find_map(|m| visit(m, edges, &mut marks, &mut Vec::new()))
}

fn assert_acyclic(krate: &Crate, what: &str) {
    // Every circle, not only the first: one is found, its last import set
    // aside, and the search goes on.
    let mut edges = krate.edges.clone();
    let mut circles = Vec::new();
    while let Some(c) = find_cycle(&edges) {
        let (from, to) = (&c[c.len() - 2], &c[c.len() - 1]);
        edges.get_mut(from).expect("on the circle").remove(to);
        circles.push(c.iter().map(name).collect::<Vec<_>>().join(" -> "));
    }
    assert!(
        circles.is_empty(),
        "import circles in {what} (break each: move the shared item down to a module both may use):\n  {}",
        circles.join("\n  ")
    );
}

#[test]
fn node_layers_import_only_downwards() {
    let node = read_crate(&repo_root().join("node/src"));
    let mut bad = layer_violations(&node, &[], NODE_LAYERS);
    bad.extend(layer_violations(&node, &["raft"], RAFT_LAYERS));
    // The crate root (lib.rs, main.rs) is no layer.
    bad.retain(|l| !l.starts_with("crate "));
    assert!(
        bad.is_empty(),
        "node/src breaks its layers (tests/tests/layering/main.rs):\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn node_has_no_import_circle() {
    assert_acyclic(&read_crate(&repo_root().join("node/src")), "node/src");
}

#[test]
fn rust_client_has_no_import_circle() {
    assert_acyclic(&read_crate(&repo_root().join("client/rust/src")), "client/rust/src");
}

/// The checks themselves: an upward import and a circle are found.
#[test]
fn the_checks_catch_an_upward_import_and_a_circle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |p: &str, s: &str| {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, s).expect("write");
    };
    write("lib.rs", "mod config; mod state;\n#[cfg(test)]\nmod fuzz;\n");
    write(
        "config/mod.rs",
        "//! uses crate::api in prose only\nuse crate::state::{self, Thing};\nconst S: &str = \"crate::api\";\n",
    );
    write(
        "state/mod.rs",
        "pub struct Thing;\nfn f() { let _ = crate::config::S; }\n#[cfg(test)]\nmod tests { use crate::api; }\n",
    );
    write("fuzz/mod.rs", "use crate::api;\n");
    let krate = read_crate(dir.path());
    let bad = layer_violations(&krate, &[], NODE_LAYERS);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("config imports state"), "{bad:?}");
    let cycle = find_cycle(&krate.edges).expect("config <-> state is a circle");
    assert_eq!(cycle.len(), 3, "{cycle:?}");
    assert!(
        !krate.files.contains_key(&vec!["fuzz".to_string()]),
        "test-only modules are left out"
    );
}

/// Prints node/src's and the Rust client's import graphs, for drawing
/// the map: `cargo test --test layering -- --ignored --nocapture`.
#[test]
#[ignore = "prints the graphs"]
fn print_graphs() {
    for dir in ["node/src", "client/rust/src"] {
        println!("== {dir}");
        for (from, to) in read_crate(&repo_root().join(dir)).edges {
            let to: Vec<String> = to.iter().map(name).collect();
            println!("{} -> {}", name(&from), to.join(" "));
        }
    }
}

/// The names a link to a node source file is followed by in design.md's
/// map (`[`api/read.rs`](../../node/src/api/read.rs) `ready` → ...`),
/// up to the next link or the paragraph's end: each is a function of
/// that file.
fn map_functions(map: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for chunk in map.split("](../../node/src/").skip(1) {
        let Some(end) = chunk.find(')') else { continue };
        // Up to the next link, or the end of the paragraph.
        let stop = [chunk.find('['), chunk.find("\n\n")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(chunk.len());
        let text = &chunk[end..stop.max(end)];
        for (i, part) in text.split('`').enumerate() {
            if i % 2 == 1 && !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                out.push((chunk[..end].to_string(), part.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_maps_write_and_read_paths_name_real_functions() {
    let root = repo_root();
    let design = std::fs::read_to_string(root.join("docs/dev/design.md")).expect("design.md");
    let start = design.find("## The map").expect("design.md has \"The map\"");
    let map = &design[start
        ..design[start + 3..]
            .find("\n## ")
            .map_or(design.len(), |e| start + 3 + e)];
    let named = map_functions(map);
    assert!(
        named.len() >= 15,
        "the map names the functions of a write and a read: {named:?}"
    );
    let missing: Vec<String> = named
        .iter()
        .filter(|(file, f)| {
            let src = std::fs::read_to_string(root.join("node/src").join(file)).unwrap_or_default();
            !src.contains(&format!("fn {f}(")) && !src.contains(&format!("fn {f}<"))
        })
        .map(|(file, f)| format!("{file}: fn {f}"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/dev/design.md's map names functions that are not there:\n  {}",
        missing.join("\n  ")
    );
}
