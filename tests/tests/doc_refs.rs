//! Every documentation path and section the repository cites exists.
//!
//! - In source and script files (node/, client/, proto/, tests/, deploy/,
//!   .ci/): every path under docs/ with a file name names a file that
//!   exists, and where a section follows it in quotes (as in
//!   `docs/operations.md, "Memory"`, possibly wrapped over comment lines),
//!   that file has a heading with that text.
//! - In README.md and docs/: every link to a local file resolves (and its
//!   `#anchor`, if any, names a heading of that file); a link, or a path
//!   of a markdown file under docs/, followed by a comma and a section in
//!   quotes names a heading too.
//!
//! A heading matches a cited section when it is that text, or that text
//! followed by " (" or ":" (the dated sessions of the performance log are
//! cited without their dates). Needs no cluster: it reads files only.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Where source and scripts live, relative to the repository's root.
const SOURCE_DIRS: [&str; 6] = ["node", "client", "proto", "tests", "deploy", ".ci"];
/// Directories never scanned: build output and tool caches.
const SKIP_DIRS: [&str; 6] = [
    "target",
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    ".pytest_cache",
];
/// Files that are data, not source.
const SKIP_EXTENSIONS: [&str; 6] = ["json", "svg", "lock", "png", "jpg", "md"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Files under `dir` (recursively), sorted, skipping `SKIP_DIRS`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() {
            if !SKIP_DIRS.contains(&name) {
                walk(&p, out);
            }
        } else {
            out.push(p);
        }
    }
}

fn extension(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or_default()
}

/// A reference found in a file: where, what it points to, and the section
/// it names, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ref {
    line: usize,
    target: String,
    section: Option<String>,
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].bytes().filter(|&b| b == b'\n').count() + 1
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// Strips what starts a comment line (`//!`, `///`, `//`, `#`, `*`) and
/// the blanks around it.
fn strip_comment_marker(line: &str) -> &str {
    let t = line.trim_start();
    for m in ["//!", "///", "//", "#", "*"] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest.trim_start();
        }
    }
    t
}

/// A section named right after a reference: `, "Text"`, where the quoted
/// text may run over several (comment) lines. `rest` starts right after
/// the path or link.
fn section_after(rest: &str) -> Option<String> {
    let rest = rest.strip_prefix(',')?;
    let mut chars = rest.char_indices().peekable();
    let mut start = None;
    // Blanks, or a line break and the next line's comment marker, then '"'.
    while let Some(&(i, c)) = chars.peek() {
        if c == '"' {
            start = Some(i + 1);
            break;
        }
        if c == '\n' {
            let next = &rest[i + 1..];
            let line_end = next.find('\n').unwrap_or(next.len());
            let stripped = strip_comment_marker(&next[..line_end]);
            if !stripped.starts_with('"') {
                return None;
            }
            start = Some(i + 1 + (line_end - stripped.len()) + 1);
            break;
        }
        if !c.is_whitespace() {
            return None;
        }
        chars.next();
    }
    let body = &rest[start?..];
    let end = body.find('"')?;
    let quoted = &body[..end];
    if quoted.len() > 300 {
        return None;
    }
    let joined: Vec<&str> = quoted.split('\n').map(strip_comment_marker).collect();
    Some(joined.join(" ").split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Every path under docs/ with a file name (one with a dot) in `text`, and
/// the section after it. `only_md`: markdown files only, and none inside a
/// link (for the docs, whose links are checked as links, and whose other
/// paths are history notes: raw results "in git history at commit ...").
fn path_refs(text: &str, only_md: bool) -> Vec<Ref> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("docs/") {
        let at = from + pos;
        from = at + 5;
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.')) {
            continue;
        }
        let len = text[at..].find(|c: char| !is_path_char(c)).unwrap_or(text.len() - at);
        let path = text[at..at + len].trim_end_matches(['.', '/']);
        let file = path.rsplit('/').next().unwrap_or_default();
        if !file.contains('.') || (only_md && (!path.ends_with(".md") || text[..at].ends_with(['[', '(']))) {
            continue;
        }
        let preceding = &text[at.saturating_sub(80)..at];
        if preceding.contains("in git history") {
            continue;
        }
        out.push(Ref {
            line: line_of(text, at),
            target: path.to_string(),
            section: section_after(&text[at + path.len()..]),
        });
    }
    out
}

/// Byte ranges of fenced code blocks (``` ... ```), where nothing is a
/// link or a heading.
fn fenced_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            match open.take() {
                None => open = Some(offset),
                Some(start) => out.push((start, offset + line.len())),
            }
        }
        offset += line.len();
    }
    if let Some(start) = open {
        out.push((start, text.len()));
    }
    out
}

/// Byte ranges of inline code spans (`...`) on one line, where a
/// `[T](x)` is code (a Go generic call), not a link.
fn code_span_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let ticks: Vec<usize> = line.match_indices('`').map(|(i, _)| offset + i).collect();
        out.extend(ticks.chunks_exact(2).map(|pair| (pair[0], pair[1] + 1)));
        offset += line.len();
    }
    out
}

fn in_ranges(ranges: &[(usize, usize)], at: usize) -> bool {
    ranges.iter().any(|&(a, b)| a <= at && at < b)
}

/// Every inline link `[text](target)` outside code blocks whose target is
/// local (not a URL), and the section after it.
fn markdown_links(text: &str) -> Vec<Ref> {
    let mut code = fenced_ranges(text);
    code.extend(code_span_ranges(text));
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("](") {
        let at = from + pos;
        from = at + 2;
        if in_ranges(&code, at) {
            continue;
        }
        let start = at + 2;
        let Some(len) = text[start..].find([')', '\n']) else {
            continue;
        };
        if text[start + len..].starts_with('\n') {
            continue;
        }
        let target = text[start..start + len].split_whitespace().next().unwrap_or_default();
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        out.push(Ref {
            line: line_of(text, at),
            target: target.to_string(),
            section: section_after(&text[start + len + 1..]),
        });
    }
    out
}

/// The headings of a markdown file, outside code blocks.
fn headings(text: &str) -> Vec<String> {
    let fences = fenced_ranges(text);
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        if in_ranges(&fences, here) {
            continue;
        }
        let t = line.trim_end();
        let hashes = t.len() - t.trim_start_matches('#').len();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            out.push(t[hashes..].trim().trim_end_matches('#').trim().to_string());
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a file, with GitHub's suffixes for repeated headings.
fn anchors(headings: &[String]) -> HashSet<String> {
    let mut out = HashSet::new();
    for h in headings {
        let base = slug(h);
        let mut name = base.clone();
        let mut n = 0;
        while !out.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
    }
    out
}

fn section_matches(heading: &str, section: &str) -> bool {
    heading == section
        || heading
            .strip_prefix(section)
            .is_some_and(|rest| rest.starts_with(" (") || rest.starts_with(':'))
}

/// Checks one reference; `base` is the directory relative paths start
/// from. Returns what is wrong with it.
fn check(base: &Path, r: &Ref) -> Option<String> {
    let (path, anchor) = match r.target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (r.target.as_str(), None),
    };
    let file = if path.is_empty() { None } else { Some(base.join(path)) };
    if let Some(f) = &file
        && !f.exists()
    {
        return Some(format!("{}: no such file", r.target));
    }
    let needs_headings = anchor.is_some() || r.section.is_some();
    if !needs_headings || file.as_ref().is_some_and(|f| extension(f) != "md" || f.is_dir()) {
        return None;
    }
    // An anchor alone (`#x`) is resolved by the caller against its own file.
    let text = fs::read_to_string(file.as_ref()?).ok()?;
    let hs = headings(&text);
    if let Some(a) = anchor
        && !anchors(&hs).contains(a)
    {
        return Some(format!("{}: no heading with the anchor #{a}", r.target));
    }
    if let Some(s) = &r.section
        && !hs.iter().any(|h| section_matches(h, s))
    {
        return Some(format!("{}: no heading \"{s}\"", r.target));
    }
    None
}

fn broken_refs(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut sources = Vec::new();
    for d in SOURCE_DIRS {
        walk(&root.join(d), &mut sources);
    }
    for f in &sources {
        if SKIP_EXTENSIONS.contains(&extension(f)) {
            continue;
        }
        let Ok(text) = fs::read_to_string(f) else {
            continue; // not text
        };
        let shown = f.strip_prefix(root).unwrap_or(f).display().to_string();
        for r in path_refs(&text, false) {
            if let Some(p) = check(root, &r) {
                problems.push(format!("{shown}:{}: {p}", r.line));
            }
        }
    }
    let mut docs = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut docs);
    for f in docs.iter().filter(|f| extension(f) == "md") {
        let text = fs::read_to_string(f).expect("markdown is text");
        let shown = f.strip_prefix(root).unwrap_or(f).display().to_string();
        let dir = f.parent().expect("a file has a directory");
        let own = anchors(&headings(&text));
        for r in markdown_links(&text) {
            if let Some(a) = r.target.strip_prefix('#') {
                if !own.contains(a) {
                    problems.push(format!("{shown}:{}: no heading with the anchor #{a} here", r.line));
                }
                continue;
            }
            if let Some(p) = check(dir, &r) {
                problems.push(format!("{shown}:{}: link {p}", r.line));
            }
        }
        for r in path_refs(&text, true) {
            if let Some(p) = check(root, &r) {
                problems.push(format!("{shown}:{}: {p}", r.line));
            }
        }
    }
    problems
}

#[test]
fn every_cited_doc_path_and_section_exists() {
    let root = repo_root();
    let problems = broken_refs(&root);
    let mut msg = String::new();
    for p in &problems {
        let _ = writeln!(msg, "  {p}");
    }
    assert!(
        problems.is_empty(),
        "{} broken documentation reference(s):\n{msg}",
        problems.len()
    );
}

#[test]
fn references_are_read_as_written() {
    // Built with format! so that this file cites no such path itself.
    let d = "docs";
    let code = format!(
        "/// see {d}/ops.md, \"Memory\"). And ({d}/dev/log.md, \"Requests that arrived join the\n\
         /// next entry\"), {d}/perf.md. Not: x{d}/a.md, {d}/bench/, {d}/dev/.\n\
         //! {d}/dev/notes.md,\n//! \"openraft's own floor\".\n"
    );
    let refs = path_refs(&code, false);
    // Compared without the leading directory, which this file must not cite.
    let got: Vec<(String, Option<&str>)> = refs
        .iter()
        .map(|r| (r.target.replacen(d, "D", 1), r.section.as_deref()))
        .collect();
    let want = [
        ("D/ops.md", Some("Memory")),
        ("D/dev/log.md", Some("Requests that arrived join the next entry")),
        ("D/perf.md", None),
        ("D/dev/notes.md", Some("openraft's own floor")),
    ];
    assert_eq!(got, want.map(|(t, s)| (t.to_string(), s)));
    assert_eq!((refs[1].line, refs[2].line, refs[3].line), (1, 2, 3));
    let md = format!(
        "# Title\n\n[a](x.md), \"Sec\" and [b](https://e.org) ![c](../{d}/y.svg#z)\n\
         `New[T](client, \"x\")` and `a` [T](t.md)\n\
         ```sh\n# not a heading [no](link.md)\n```\n## At a2326da (2026-11-26)\n"
    );
    let links: Vec<(String, Option<String>)> = markdown_links(&md).into_iter().map(|r| (r.target, r.section)).collect();
    assert_eq!(
        links,
        [
            ("x.md".to_string(), Some("Sec".to_string())),
            (format!("../{d}/y.svg#z"), None),
            ("t.md".to_string(), None)
        ]
    );
    let hs = headings(&md);
    assert_eq!(hs, ["Title", "At a2326da (2026-11-26)"]);
    assert!(anchors(&hs).contains("at-a2326da-2026-11-26"));
    assert!(section_matches("The Raft wire (2026-11-25, night)", "The Raft wire"));
    assert!(section_matches("Scale: a million live handles", "Scale"));
    assert!(!section_matches("The Raft wire protocol", "The Raft wire"));
}

#[test]
fn a_broken_reference_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let d = "docs";
    fs::create_dir_all(root.join(d).join("dev")).expect("mkdir");
    fs::create_dir_all(root.join("node/src")).expect("mkdir");
    fs::write(
        root.join("README.md"),
        format!("[ok]({d}/a.md#one) [gone]({d}/gone.md)\n"),
    )
    .expect("write");
    fs::write(
        root.join(d).join("a.md"),
        "# One\n\n[back](../README.md) [here](#two)\n",
    )
    .expect("write");
    fs::write(
        root.join("node/src/lib.rs"),
        format!("// ({d}/a.md, \"One\") ({d}/a.md, \"Three\") {d}/dev/missing.md\n"),
    )
    .expect("write");
    let problems = broken_refs(root);
    let want = [
        format!("node/src/lib.rs:1: {d}/a.md: no heading \"Three\""),
        format!("node/src/lib.rs:1: {d}/dev/missing.md: no such file"),
        format!("README.md:1: link {d}/gone.md: no such file"),
        format!("{d}/a.md:3: no heading with the anchor #two here"),
    ];
    assert_eq!(problems, want, "{problems:#?}");
}
