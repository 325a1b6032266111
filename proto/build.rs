//! Generates the gRPC code of both packages with a vendored `protoc`, so a
//! fresh machine needs no protobuf compiler installed: `handlestore.v1`
//! (the public API) and `handlestore.internal.v1` (peers, the log, storage).

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
    Ok(())
}
