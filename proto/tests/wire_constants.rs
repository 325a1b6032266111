//! No client types a wire constant by hand: every client's constants are
//! generated from `proto/wire.txt` (as its error table is from
//! `reasons.txt`), so this test holds each client's hand-written source to
//! two rules:
//!
//! 1. none of the table's texts (the header names, the TLS markers) is
//!    written there as a literal: it would be a second copy that drifts;
//! 2. every row is used there, under the name its generator gives it: a
//!    client that typed `15_000` instead would not use `CALL_TIMEOUT_MS`.
//!
//! Generated files, build output and tests (whose fake nodes may say a
//! header as a node would) are not hand-written source.

use std::path::{Path, PathBuf};

/// One client: where its hand-written source is, and its names for a row.
struct Client {
    name: &'static str,
    roots: &'static [&'static str],
    extensions: &'static [&'static str],
    /// File names its generators write (skipped).
    generated: &'static [&'static str],
    /// The name the client's generator gives a row (`name`, `kind`).
    ident: fn(&str, &str) -> String,
    /// Rows it has no use for, and why.
    unused: &'static [&'static str],
}

fn upper(name: &str, _kind: &str) -> String {
    name.to_ascii_uppercase()
}

fn upper_ms(name: &str, kind: &str) -> String {
    let base = name.to_ascii_uppercase();
    if kind == "ms" { base + "_MS" } else { base }
}

fn go_wire(name: &str, _kind: &str) -> String {
    let camel: String = name.split('_').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect();
    format!("wire{camel}")
}

const CLIENTS: &[Client] = &[
    // The node says the two headers; the rest are the clients'.
    Client {
        name: "node",
        roots: &["node/src"],
        extensions: &["rs"],
        generated: &[],
        ident: upper,
        unused: &[
            "max_pushback",
            "call_timeout",
            "attempt_timeout",
            "connect_timeout",
            "backoff_base",
            "backoff_max",
            "max_calls",
            "max_submit_writes",
            "max_submit_reads",
            "max_submit_read_bytes",
            "tls_refused_markers",
        ],
    },
    Client {
        name: "Rust",
        roots: &["client/rust/src"],
        extensions: &["rs"],
        generated: &[],
        ident: upper,
        unused: &[],
    },
    Client {
        name: "Python",
        roots: &["client/python/src/handlestore"],
        extensions: &["py"],
        generated: &["_wire.py", "_reasons.py", "reasons.py"],
        ident: upper,
        // grpcio takes no connect timeout of its own; the attempt timeout
        // bounds connecting.
        unused: &["connect_timeout"],
    },
    Client {
        name: "TypeScript",
        roots: &["client/ts/src"],
        extensions: &["ts"],
        generated: &["wire.ts", "reasons.ts", "reasonTable.ts"],
        ident: upper_ms,
        // Nor does @grpc/grpc-js.
        unused: &["connect_timeout"],
    },
    Client {
        name: "Go",
        roots: &["client/go"],
        extensions: &["go"],
        generated: &["wire_gen.go", "reasons_gen.go"],
        ident: go_wire,
        unused: &[],
    },
    Client {
        name: "Java",
        roots: &["client/java"],
        extensions: &["java"],
        generated: &["Wire.java", "GenReasons.java"],
        ident: upper,
        unused: &[],
    },
];

/// Directories that hold no hand-written source.
const NOT_SOURCE: &[&str] = &[
    "node_modules",
    "target",
    "dist",
    "gen",
    "v1",
    "test",
    "tests",
    "testdata",
    ".venv",
    "__pycache__",
    "build",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo")
        .to_path_buf()
}

/// `name | kind | value | what` rows of wire.txt: (name, kind, values).
fn rows() -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(repo().join("proto/wire.txt")).expect("wire.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let cells: Vec<&str> = l.splitn(4, '|').map(str::trim).collect();
            let values = match cells[1] {
                "strings" => cells[2].split(", ").map(String::from).collect(),
                "string" => vec![cells[2].to_string()],
                _ => Vec::new(),
            };
            (cells[0].to_string(), cells[1].to_string(), values)
        })
        .collect()
}

/// The client's hand-written source files and their text.
fn sources(client: &Client) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = client.roots.iter().map(|r| repo().join(r)).collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if path.is_dir() {
                if !NOT_SOURCE.contains(&name.as_str()) {
                    dirs.push(path);
                }
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
            let test = name.ends_with("_test.go") || name.starts_with("test_") || name.contains(".test.");
            if client.extensions.contains(&ext) && !test && !client.generated.contains(&name.as_str()) {
                out.push((path.clone(), std::fs::read_to_string(&path).expect("source")));
            }
        }
    }
    assert!(!out.is_empty(), "{}: no source found", client.name);
    out
}

/// A text written as a literal in a source's code: quoted whole, on a line
/// that is not a comment (docs may name a header), before a Rust file's
/// unit tests.
fn literal(source: &str, value: &str) -> bool {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let comment = |l: &str| ["//", "#", "*", "/*"].iter().any(|c| l.trim_start().starts_with(c));
    code.lines()
        .filter(|l| !comment(l))
        .any(|l| ['"', '\'', '`'].iter().any(|q| l.contains(&format!("{q}{value}{q}"))))
}

#[test]
fn no_client_types_a_wire_text_by_hand() {
    let rows = rows();
    let mut found = Vec::new();
    for client in CLIENTS {
        for (path, text) in sources(client) {
            for value in rows.iter().flat_map(|(_, _, values)| values) {
                if literal(&text, value) {
                    found.push(format!("{}: {value:?}", path.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "typed by hand, not generated from proto/wire.txt:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_client_uses_every_wire_row_it_needs() {
    let mut missing = Vec::new();
    for client in CLIENTS {
        let sources = sources(client);
        for (name, kind, _) in rows() {
            let ident = (client.ident)(&name, &kind);
            let used = sources.iter().any(|(_, text)| text.contains(&ident));
            if !used && !client.unused.contains(&name.as_str()) {
                missing.push(format!("{}: {ident} ({name})", client.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not used (typed by hand instead?):\n{}",
        missing.join("\n")
    );
}

/// The check sees what it must: a planted literal and a planted use.
#[test]
fn the_checks_see_a_literal_and_a_name() {
    assert!(literal(r#"const H = "x-handlestore-leader";"#, "x-handlestore-leader"));
    assert!(!literal(
        "/// the `x-handlestore-leader` header",
        "x-handlestore-leader"
    ));
    assert!(!literal(
        "#[cfg(test)]\nconst H: &str = \"x-handlestore-leader\";",
        "x-handlestore-leader"
    ));
    assert_eq!(go_wire("tls_refused_markers", "strings"), "wireTlsRefusedMarkers");
    assert_eq!(upper_ms("call_timeout", "ms"), "CALL_TIMEOUT_MS");
}
