//! Reading Rust source for its imports: comments and string contents
//! blanked, test-only items removed, every `use` tree and inline
//! `crate::`/`super::`/`self::` path resolved to the module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path inside its crate (`["raft", "log", "store"]`; the
/// crate root is empty).
pub type ModPath = Vec<String>;

/// A crate's modules (test-only ones left out) and which modules each
/// one's code refers to.
pub struct Crate {
    pub files: BTreeMap<ModPath, PathBuf>,
    pub edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

/// `src` with comments removed and the contents of string and character
/// literals blanked, so braces and paths inside them do not count.
pub fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(len) = raw_string_len(rest) {
            out.push_str("\"\"");
            i += len;
        } else if b[i] == b'"' {
            i += quoted_len(rest, b'"');
            out.push_str("\"\"");
        } else if b[i] == b'\'' && is_char_literal(rest) {
            i += quoted_len(rest, b'\'');
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`)
/// starting `s`, if one does.
fn raw_string_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("br").or_else(|| s.strip_prefix('r'))?;
    let hashes = body.len() - body.trim_start_matches('#').len();
    let open = &body[hashes..];
    if !open.starts_with('"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let end = open[1..].find(&close)?;
    Some((s.len() - body.len()) + hashes + 1 + end + close.len())
}

/// The length of a literal quoted by `q` starting `s`, escapes included.
fn quoted_len(s: &str, q: u8) -> usize {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() && b[i] != q {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

/// Whether the `'` starting `s` opens a character literal (not a lifetime).
fn is_char_literal(s: &str) -> bool {
    let mut chars = s.chars().skip(1);
    matches!((chars.next(), chars.next()), (Some('\\'), _) | (Some(_), Some('\'')))
}

/// `code` (blanked) without its `#[cfg(test)]` items, and the names of
/// the modules those items declare (`#[cfg(test)] mod tests;`).
pub fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_mods = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let end = item_len(item);
        if let Some(name) = declared_mod(&item[..end]) {
            test_mods.push(name);
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_mods)
}

/// The length of the item starting `s`: up to its `;`, or its `{ ... }`
/// block, whichever comes first.
fn item_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// The module an item declares without a body (`mod x;`), if it does.
fn declared_mod(item: &str) -> Option<String> {
    let words: Vec<&str> = item
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    let at = words.iter().position(|w| *w == "mod")?;
    let name = words.get(at + 1)?;
    item.trim_end().ends_with(';').then(|| name.to_string())
}

/// The `use` statements of `code`, each as its tree and whether it
/// re-exports (`pub`, `pub(crate)`), and the code without them.
fn use_statements(code: &str) -> (Vec<(bool, &str)>, String) {
    let (mut uses, mut rest, mut from) = (Vec::new(), String::new(), 0);
    while let Some(at) = find_word(&code[from..], "use").map(|i| from + i) {
        let end = code[at..].find(';').map_or(code.len(), |e| at + e);
        let before = code[..at].trim_end();
        uses.push((
            before.ends_with("pub") || before.ends_with("pub(crate)"),
            &code[at + 3..end],
        ));
        rest.push_str(&code[from..at]);
        from = end;
    }
    rest.push_str(&code[from..]);
    (uses, rest)
}

/// Every path a `use` statement or an inline path names in `code`, as
/// written: `crate`/`super`/`self` first. External crates are left out.
pub fn paths(code: &str) -> Vec<Vec<String>> {
    let (uses, rest) = use_statements(code);
    let mut out = Vec::new();
    for (_, tree) in uses {
        expand(tree, Vec::new(), &mut out);
    }
    let in_path = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    for head in ["crate::", "super::"] {
        for (i, _) in rest.match_indices(head) {
            if rest[..i].chars().next_back().is_some_and(in_path) {
                continue;
            }
            let tail = &rest[i..];
            let len = tail.find(|c: char| !in_path(c)).unwrap_or(tail.len());
            out.push(
                tail[..len]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            );
        }
    }
    out.retain(|p| matches!(p.first().map(String::as_str), Some("crate" | "super" | "self")));
    out
}

/// The items `code` re-exports by name (`pub use a::b::Item;`, also
/// `pub(crate)`), each with the path it names, as written.
pub fn reexports(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for (_, tree) in use_statements(code).0.into_iter().filter(|(re, _)| *re) {
        let mut paths = Vec::new();
        expand(tree, Vec::new(), &mut paths);
        for p in paths.into_iter().filter(|p| p.len() > 1) {
            out.insert(p.last().expect("not empty").clone(), p);
        }
    }
    out
}

/// Where `word` first stands alone in `s`.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    s.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = s[..i].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = s[i + word.len()..].chars().next().is_none_or(|c| !is_ident(c));
        before && after
    })
}

/// The paths of a `use` tree (`a::{b, c::{d, self}}`), each prefixed by
/// `prefix`.
fn expand(tree: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut path = prefix;
        let head = tree.split(" as ").next().unwrap_or(tree);
        path.extend(
            head.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "*")
                .map(String::from),
        );
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        out.push(path);
        return;
    };
    let mut base = prefix;
    base.extend(
        tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from),
    );
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    for part in split_top(inner) {
        expand(part, base.clone(), out);
    }
}

/// `s` split at its commas outside braces.
fn split_top(s: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The module path of the file at `rel` (relative to the crate's src).
fn mod_path(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read src")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Reads the crate under `src`: its modules and what each refers to.
pub fn read_crate(src: &Path) -> Crate {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut code = BTreeMap::new();
    let mut test_only = BTreeSet::new();
    for f in files {
        let m = mod_path(f.strip_prefix(src).expect("under src"));
        let (text, tests) = without_tests(&blank(&fs::read_to_string(&f).expect("read file")));
        for t in tests {
            test_only.insert([m.clone(), vec![t]].concat());
        }
        code.insert(m, (f, text));
    }
    code.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    let names = Names {
        modules: code.keys().cloned().collect(),
        reexports: code.iter().map(|(m, (_, text))| (m.clone(), reexports(text))).collect(),
    };
    let mut edges = BTreeMap::new();
    for (m, (_, text)) in &code {
        let to: BTreeSet<ModPath> = paths(text)
            .iter()
            .filter_map(|p| names.resolve(m, p, 0))
            .filter(|t| !related(m, t))
            .collect();
        edges.insert(m.clone(), to);
    }
    Crate {
        files: code.into_iter().map(|(m, (f, _))| (m, f)).collect(),
        edges,
    }
}

/// A crate's modules, and what each re-exports by name.
struct Names {
    modules: BTreeSet<ModPath>,
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
}

impl Names {
    /// The module `path`, as written in module `from`, names: the longest
    /// prefix of its absolute path that is a module, or, where the item
    /// after it is a re-export of that module, the module it comes from.
    fn resolve(&self, from: &ModPath, path: &[String], depth: usize) -> Option<ModPath> {
        let abs = absolute(from, path);
        let found = (0..=abs.len())
            .rev()
            .map(|n| abs[..n].to_vec())
            .find(|p| self.modules.contains(p))?;
        let item = abs.get(found.len());
        match item.and_then(|i| self.reexports.get(&found)?.get(i)) {
            Some(via) if depth < 8 => self.resolve(&found, via, depth + 1).or(Some(found)),
            _ => Some(found),
        }
    }
}

/// `path`, as written in module `from`, from the crate's root.
fn absolute(from: &ModPath, path: &[String]) -> ModPath {
    let mut abs: ModPath = Vec::new();
    let mut segs = path.iter().peekable();
    match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segs.next();
        }
        Some("self") => {
            segs.next();
            abs = from.clone();
        }
        _ => abs = from.clone(),
    }
    while segs.peek().is_some_and(|s| *s == "super") {
        segs.next();
        abs.pop();
    }
    abs.extend(segs.cloned());
    abs
}

/// Whether one module contains the other (a folder's `mod.rs` declares
/// and re-exports its children, and they use its shared types: not an
/// import between concerns).
fn related(a: &ModPath, b: &ModPath) -> bool {
    a.starts_with(b) || b.starts_with(a)
}
