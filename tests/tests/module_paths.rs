//! Every module path of the node that the docs and the comments name
//! exists: `raft::log::abstain`, `api::watch`, `raft::log::abstain::Standing`
//! in docs/ and README.md, and in the comments of node/src and tests/,
//! name a module of node/src (a `name.rs` or `name/mod.rs`), and an item
//! after it (at most two segments: `Type` or `Type::method`) is declared
//! in that module's file. rustdoc checks the links of the node's doc
//! comments (`cargo doc -D warnings` in .ci/run); this covers the text it
//! does not read: markdown, `//` comments, other crates' comments, and
//! paths into a stage private to `raft` named from outside it.
//!
//! A path is recognised by its first segment, one of the node's top-level
//! modules (`raft`, `api`, ...), with or without `crate::` or
//! `handlestore_node::`. In tests/, where the crate has modules of its own
//! with the same names (`tls`), those names are left out.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Files under `dir` ending in `ext`, recursively, skipping build output.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() && !["target", "node_modules", ".git"].contains(&name) {
            files(&p, ext, out);
        } else if name.ends_with(ext) {
            out.push(p);
        }
    }
}

/// The top-level modules of a crate's `src`: its directories and its
/// files but `lib.rs` and `main.rs`.
fn top_modules(src: &Path) -> BTreeSet<String> {
    fs::read_dir(src)
        .expect("a src directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_str()?.to_string();
            let module = p.is_dir() || p.extension().is_some_and(|e| e == "rs");
            (module && stem != "lib" && stem != "main").then_some(stem)
        })
        .collect()
}

/// The file of module `segs` under `src`, if it is one.
fn module_file(src: &Path, segs: &[&str]) -> Option<PathBuf> {
    let base = segs.iter().fold(src.to_path_buf(), |p, s| p.join(s));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Whether `code` (comments left out) declares `name`: an item, a
/// re-export, or an enum variant or field on a line of its own.
fn declares(code: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.lines().any(|line| {
        let words: Vec<&str> = line.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty()).collect();
        let item = words.windows(2).any(|w| {
            [
                "fn",
                "struct",
                "enum",
                "trait",
                "const",
                "static",
                "type",
                "mod",
                "macro_rules",
            ]
            .contains(&w[0])
                && w[1] == name
        });
        let reexport = line.trim_start().starts_with("pub") && line.contains("use ") && words.contains(&name);
        let member = line.trim_start().starts_with(name)
            && line.trim_start()[name.len()..].starts_with(['(', '{', ',', ':', ' ']);
        item || reexport || member
    })
}

/// What is wrong with the path `p` (segments after any crate prefix), if
/// anything.
fn check(src: &Path, p: &str) -> Option<String> {
    let segs: Vec<&str> = p.split("::").collect();
    let depth = (1..=segs.len())
        .rev()
        .find(|&i| module_file(src, &segs[..i]).is_some())?;
    let file = module_file(src, &segs[..depth]).expect("found");
    let rest = &segs[depth..];
    let code: String = fs::read_to_string(&file)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let shown = segs[..depth].join("::");
    match rest {
        [] => None,
        [item] | [item, _] if declares(&code, item) => None,
        [_, _] | [_] => Some(format!("{p}: {shown} declares no `{}`", rest[0])),
        _ => Some(format!("{p}: no module {}::{}", shown, rest[0])),
    }
}

/// Every node module path in `text`, with its line: a run of `a::b`
/// segments whose first (after `crate::` or `handlestore_node::`) is one
/// of `tops`, not itself the tail of a longer path.
fn paths_in(text: &str, tops: &BTreeSet<String>) -> Vec<(usize, String)> {
    let is_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find(|c: char| c.is_alphanumeric() || c == '_') {
            let before = rest[..start].chars().last();
            let run_len = rest[start..].find(|c: char| !is_path(c)).unwrap_or(rest.len() - start);
            let run = rest[start..start + run_len].trim_end_matches(':');
            rest = &rest[start + run_len..];
            if before.is_some_and(|c| c == '.' || c == '/' || c == '-') {
                continue; // a file path, a log target's tail, a flag
            }
            let path = run
                .strip_prefix("crate::")
                .or_else(|| run.strip_prefix("handlestore_node::"))
                .unwrap_or(run);
            let first = path.split("::").next().unwrap_or_default();
            if path.contains("::") && tops.contains(first) {
                out.push((n + 1, path.to_string()));
            }
        }
    }
    out
}

/// The comments of a Rust file, with blank lines kept for the numbering.
fn comments(code: &str) -> String {
    code.lines()
        .map(|l| l.find("//").map_or("", |i| &l[i..]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn stale_paths(root: &Path) -> Vec<String> {
    let src = root.join("node/src");
    let tops = top_modules(&src);
    let tests_own = top_modules(&root.join("tests/src"));
    let tests_tops: BTreeSet<String> = tops.difference(&tests_own).cloned().collect();
    let mut scanned: Vec<(PathBuf, String, &BTreeSet<String>)> = Vec::new();
    let mut md = vec![root.join("README.md")];
    files(&root.join("docs"), ".md", &mut md);
    for f in md {
        let text = fs::read_to_string(&f).expect("markdown is text");
        scanned.push((f, text, &tops));
    }
    for (dir, names) in [("node/src", &tops), ("tests", &tests_tops)] {
        let mut rs = Vec::new();
        files(&root.join(dir), ".rs", &mut rs);
        for f in rs {
            let text = comments(&fs::read_to_string(&f).expect("source is text"));
            scanned.push((f, text, names));
        }
    }
    let mut problems = Vec::new();
    for (f, text, names) in &scanned {
        let shown = f.strip_prefix(root).unwrap_or(f).display().to_string();
        for (line, p) in paths_in(text, names) {
            if let Some(why) = check(&src, &p) {
                problems.push(format!("{shown}:{line}: {why}"));
            }
        }
    }
    problems
}

#[test]
fn every_node_module_path_named_in_docs_and_comments_exists() {
    let problems = stale_paths(&repo_root());
    let mut msg = String::new();
    for p in &problems {
        let _ = writeln!(msg, "  {p}");
    }
    assert!(problems.is_empty(), "{} stale module path(s):\n{msg}", problems.len());
}

#[test]
fn a_moved_module_or_a_missing_item_is_caught_and_a_real_one_is_not() {
    let src = repo_root().join("node/src");
    assert_eq!(check(&src, "raft::log::abstain"), None);
    assert_eq!(check(&src, "raft::log::abstain::Standing"), None);
    assert_eq!(check(&src, "raft::Durability"), None, "a re-export");
    assert!(check(&src, "raft::abstain").is_some(), "moved under raft::log");
    assert!(check(&src, "raft::log::abstain::Sitting").is_some());
    assert!(check(&src, "raft::log::nowhere::deep::er").is_some());
    let tops = top_modules(&src);
    let found = paths_in(
        "see crate::raft::log::abstain, `api::watch`, node/src/raft/log.rs, and\n\
         handlestore_node::raft::net::reach; not openraft::raft::Raft nor tests::raft::x",
        &tops,
    );
    let want = [(1, "raft::log::abstain"), (1, "api::watch"), (2, "raft::net::reach")];
    assert_eq!(found, want.map(|(l, p)| (l, p.to_string())));
}
