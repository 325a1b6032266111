//! `wire.txt` → `wire.rs`: the wire constants and client defaults every
//! client generates from the same file (`handlestore_proto::wire`).

use std::fmt::Write as _;

/// One row of `wire.txt`: `name | kind | value | what`.
struct Row {
    name: String,
    kind: String,
    value: String,
    what: String,
}

/// Reads `wire.txt`, refusing a malformed row or kind.
fn rows(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (line, cells) in crate::table::rows("wire.txt", text, &["name", "kind", "value", "what"])? {
        let [name, kind, value, what] = cells[..] else {
            unreachable!("four cells")
        };
        let numeric = matches!(kind, "ms" | "count" | "bytes");
        if numeric && value.parse::<u64>().is_err() {
            return Err(format!("wire.txt:{line}: {kind} wants a whole number, not {value:?}"));
        }
        if !numeric && !matches!(kind, "string" | "strings") {
            return Err(format!("wire.txt:{line}: unknown kind {kind:?}"));
        }
        rows.push(Row {
            name: name.into(),
            kind: kind.into(),
            value: value.into(),
            what: what.into(),
        });
    }
    Ok(rows)
}

/// The Rust type and expression of a row's value.
fn rust(row: &Row) -> (&'static str, String) {
    match row.kind.as_str() {
        "ms" => ("Duration", format!("Duration::from_millis({})", row.value)),
        "count" | "bytes" => ("usize", row.value.clone()),
        "string" => ("&str", format!("{:?}", row.value)),
        _ => {
            let items: Vec<String> = row.value.split(", ").map(|s| format!("{s:?}")).collect();
            ("&[&str]", format!("&[{}]", items.join(", ")))
        }
    }
}

/// Writes `wire.rs` into `OUT_DIR`: one documented constant per row.
pub fn generate() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=wire.txt");
    let mut out = String::new();
    for row in rows(&std::fs::read_to_string("wire.txt")?)? {
        let (ty, value) = rust(&row);
        let name = row.name.to_ascii_uppercase();
        writeln!(out, "/// {}\npub const {name}: {ty} = {value};", row.what)?;
    }
    let path = std::path::Path::new(&std::env::var("OUT_DIR")?).join("wire.rs");
    std::fs::write(path, out)?;
    Ok(())
}
