//! Generates the gRPC code of both packages with a vendored `protoc`, so a
//! fresh machine needs no protobuf compiler installed: `handlestore.v1`
//! (the public API) and `handlestore.internal.v1` (peers, the log, storage);
//! the error table's Rust (`reasons.txt` → `reasons.rs`) and the wire
//! constants' (`wire.txt` → `wire.rs`, in `build/wire.rs`).

use std::fmt::Write as _;

#[path = "build/table.rs"]
mod table;
#[path = "build/wire.rs"]
mod wire;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; nothing else reads the
    // environment concurrently.
    unsafe { std::env::set_var("PROTOC", protoc) };

    let protos = [
        "handlestore/v1/common.proto",
        "handlestore/v1/handles.proto",
        "handlestore/v1/state.proto",
        "handlestore/v1/writes.proto",
        "handlestore/v1/reads.proto",
        "handlestore/v1/admin.proto",
        "handlestore/v1/auth.proto",
        "handlestore/v1/watch.proto",
        "handlestore/internal/v1/log.proto",
        "handlestore/internal/v1/peer.proto",
        "handlestore/internal/v1/storage.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    tonic_prost_build::configure()
        // Raft log payloads must be serde types (openraft's `serde` feature),
        // and a command carries the public WriteId.
        .type_attribute(".handlestore", "#[derive(serde::Serialize, serde::Deserialize)]")
        // Shared, not copied, when an entry goes to several followers.
        .bytes(".handlestore.internal.v1.WireEntry")
        .compile_protos(&protos, &["."])?;
    watch_out_server();
    methods(&protos)?;
    wire::generate()?;
    reasons()
}

/// Writes the node's server of `handlestore.v1.Watch` (watch.proto's one
/// method, as generated above), sending `WatchOut`s instead of
/// `WatchResponse`s: one response encoded once may go to many watchers
/// (`src/watch_out.rs`). The wire is the same.
fn watch_out_server() {
    let watch = tonic_build::manual::Method::builder()
        .name("watch")
        .route_name("Watch")
        .input_type("crate::v1::WatchRequest")
        .output_type("crate::watch_out::WatchOut")
        .codec_path("tonic_prost::ProstCodec")
        .server_streaming()
        .build();
    let service = tonic_build::manual::Service::builder()
        .name("Watch")
        .package("handlestore.v1")
        .method(watch)
        .build();
    tonic_build::manual::Builder::new()
        .build_client(false)
        .build_transport(false)
        .compile(&[service]);
}

/// Writes `methods.rs`: every gRPC method the protos define, as its path
/// without the leading slash ("handlestore.v1.Handles/Mint"), read from
/// their `package`, `service` and `rpc` lines.
fn methods(protos: &[&str]) -> Result<(), Box<dyn std::error::Error>> {
    let mut paths = Vec::new();
    for p in protos {
        let (mut package, mut service) = (String::new(), String::new());
        for line in std::fs::read_to_string(p)?.lines().map(str::trim) {
            let word = |prefix: &str| {
                line.strip_prefix(prefix)
                    .map(|rest| {
                        rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                            .next()
                    })
                    .and_then(|w| w.map(str::to_string))
            };
            if let Some(w) = word("package ") {
                package = w;
            } else if let Some(w) = word("service ") {
                service = w;
            } else if let Some(w) = word("rpc ") {
                if package.is_empty() || service.is_empty() {
                    return Err(format!("{p}: rpc {w} outside a package's service").into());
                }
                paths.push(format!("{package}.{service}/{w}"));
            }
        }
    }
    let mut out = String::from(
        "/// Every gRPC method of both packages, as its path without the leading\n\
         /// slash (`handlestore.v1.Handles/Mint`).\n",
    );
    writeln!(out, "pub const METHODS: [&str; {}] = [", paths.len())?;
    for path in &paths {
        writeln!(out, "    {path:?},")?;
    }
    out.push_str("];\n");
    let path = std::path::Path::new(&std::env::var("OUT_DIR")?).join("methods.rs");
    std::fs::write(path, out)?;
    Ok(())
}

/// One row of `reasons.txt`.
struct Row {
    name: String,
    code: String,
    retry: String,
    when: String,
}

/// Reads `reasons.txt`, refusing a malformed row.
fn rows(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (line, cells) in table::rows("reasons.txt", text, &["reason", "CODE", "retried", "when"])? {
        let [name, code, retry, when] = cells[..] else {
            unreachable!("four cells")
        };
        if !["yes", "no", "resume"].contains(&retry) {
            return Err(format!("reasons.txt:{line}: retried is yes, no or resume"));
        }
        rows.push(Row {
            name: name.into(),
            code: code.into(),
            retry: retry.into(),
            when: when.into(),
        });
    }
    Ok(rows)
}

/// `invalid_argument` → `InvalidArgument` (a reason or a gRPC code).
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let w = w.to_ascii_lowercase();
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Writes `reasons.rs`: the `Reason` enum and its table lookups.
fn reasons() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=reasons.txt");
    let rows = rows(&std::fs::read_to_string("reasons.txt")?)?;
    let mut out = String::from(
        "/// A reason of the error table (`proto/reasons.txt`).\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n#[non_exhaustive]\npub enum Reason {\n",
    );
    for r in &rows {
        writeln!(out, "    /// {}\n    {},", r.when, camel(&r.name))?;
    }
    writeln!(
        out,
        "}}\n\nimpl Reason {{\n    /// Every row of the table, in its order."
    )?;
    writeln!(out, "    pub const ALL: [Reason; {}] = [", rows.len())?;
    for r in &rows {
        writeln!(out, "        Reason::{},", camel(&r.name))?;
    }
    writeln!(out, "    ];")?;
    let arms = |f: &dyn Fn(&Row) -> String| -> String {
        rows.iter()
            .map(|r| format!("            Reason::{} => {},\n", camel(&r.name), f(r)))
            .collect()
    };
    let mut method = |sig: &str, doc: &str, f: &dyn Fn(&Row) -> String| {
        write!(
            out,
            "\n    /// {doc}\n    pub const fn {sig} {{\n        match self {{\n{}        }}\n    }}\n",
            arms(f)
        )
    };
    method(
        "name(self) -> &'static str",
        "The reason as sent (`ErrorDetail.reason`).",
        &|r| format!("{:?}", r.name),
    )?;
    method(
        "code(self) -> tonic::Code",
        "The gRPC code it always travels with.",
        &|r| format!("tonic::Code::{}", camel(&r.code)),
    )?;
    method(
        "code_name(self) -> &'static str",
        "The code's name (`INVALID_ARGUMENT`).",
        &|r| format!("{:?}", r.code),
    )?;
    method(
        "retry(self) -> Retry",
        "Whether the clients try again on their own.",
        &|r| format!("Retry::{}", camel(&r.retry)),
    )?;
    method("when(self) -> &'static str", "When a node answers it.", &|r| {
        format!("{:?}", r.when)
    })?;
    out.push_str("}\n");
    let path = std::path::Path::new(&std::env::var("OUT_DIR")?).join("reasons.rs");
    std::fs::write(path, out)?;
    Ok(())
}
