//! Test harness for handlestore: starts real `handlestore` processes on free
//! loopback ports, each with its own temporary data directory, and gives
//! tests handles to kill, pause, restart and inspect them.

pub mod acked;
pub mod chaos;
pub mod cluster;
pub mod compose;
pub mod creds;
pub mod dns;
pub mod faketime;
pub mod linkem;
pub mod mcp;
pub mod mcp_raw;
pub mod mcp_resume;
pub mod netns;
pub mod peer_attack;
pub mod peers;
pub mod powercut;
pub mod python;
pub mod side_by_side;
pub mod stored;
pub mod tls;

pub use cluster::{TestCluster, TestClusterBuilder, free_port, free_port_run, handlestore_bin};

/// The workspace's root directory (the clone).
pub fn repo_root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The keys a watch delivers, in order, until at least `n` arrived (the
/// whole of the last batch); each batch must come within 20 s.
pub async fn keys_heard(watch: &mut handlestore_client::Watch, n: usize) -> Vec<String> {
    let mut keys = Vec::new();
    while keys.len() < n {
        let batch = tokio::time::timeout(std::time::Duration::from_secs(20), watch.next())
            .await
            .expect("in time")
            .expect("a batch");
        keys.extend(batch.changes.into_iter().map(|c| c.key));
    }
    keys
}

/// Retries a raw gRPC call while it answers UNAVAILABLE (an election in
/// progress on a busy machine), as a real client would, for up to 20 s.
/// Tests that talk to the services directly use it so that what they check is
/// the answer, not the timing of elections.
pub async fn retry_unavailable<T, F, Fut>(mut call: F) -> Result<T, tonic::Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match call().await {
            Err(s) if s.code() == tonic::Code::Unavailable && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => return other.map(tonic::Response::into_inner),
        }
    }
}

/// `call!(client.method(request))`: a raw gRPC call through
/// [`retry_unavailable`], cloning the client and the request per attempt.
#[macro_export]
macro_rules! call {
    ($client:ident . $method:ident ($req:expr)) => {{
        let req = $req;
        $crate::retry_unavailable(|| {
            let mut c = $client.clone();
            let r = req.clone();
            async move { c.$method(r).await }
        })
        .await
    }};
}
