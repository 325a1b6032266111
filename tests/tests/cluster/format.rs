//! Stored format versions: a data directory of every format in
//! tests/fixtures/formats (made by its make.sh with the build that wrote
//! that format) opens and serves what was written into it; one of format 0
//! (unversioned: the newest fixture without its stamp) is migrated and
//! stamped; one stamped newer than this build is refused, naming both
//! versions, and left as it was. And the peer protocol's version: a peer
//! that speaks another one is named in `status`, with the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use handlestore_client::{Client, HandleStore, StateTool, StateValue};
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use handlestore_tests::stored::{stamp, stamped};
use handlestore_tests::{free_port, handlestore_bin};
use pb::admin_client::AdminClient;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats")
}

/// Every fixture's version, oldest first.
fn versions() -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    assert!(!v.is_empty(), "no fixture data directory");
    v
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read fixture") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

/// A copy of fixture `version`'s data directory, to run a node on.
fn data_of(version: u32, dir: &Path) -> PathBuf {
    let data = dir.join("data");
    copy_dir(&fixtures().join(version.to_string()).join("data"), &data);
    data
}

struct Node {
    child: std::process::Child,
    endpoint: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(data: &Path, log: &Path) -> Node {
    let port = free_port();
    let log = std::fs::File::create(log).expect("log");
    let child = Command::new(handlestore_bin())
        .args(["node", "--id", "1", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data")
        .arg(data)
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn node");
    Node {
        child,
        endpoint: format!("127.0.0.1:{port}"),
    }
}

/// Reads back every line of the fixture's keys.txt through a node.
async fn reads_what_was_written(version: u32, client: &Client) {
    let keys = std::fs::read_to_string(fixtures().join(version.to_string()).join("keys.txt")).expect("keys.txt");
    let tool = client.state_tool();
    for line in keys.lines() {
        let mut parts = line.splitn(3, ' ');
        let (kind, name, want) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        match kind {
            "handle" => {
                let (store, id) = (name, want.split_once(' ').expect("id value").0);
                let want: Value = serde_json::from_str(want.split_once(' ').expect("value").1).expect("json");
                let carts = client.handle_store::<Value>(store).build();
                assert_eq!(carts.get(id).await.expect("get"), Some(want), "{line}");
            }
            "kv" | "raw" => {
                let entry = tool.retrieve(name).await.expect("retrieve").expect(name);
                let want = match kind {
                    "kv" => StateValue::Json(serde_json::from_str(want).expect("json")),
                    _ => StateValue::Bytes(want.as_bytes().to_vec()),
                };
                assert_eq!(entry.value, Some(want), "{line}");
            }
            other => panic!("unknown line kind {other}"),
        }
    }
}

async fn serves(node: &Node, version: u32) {
    let client = Client::builder([node.endpoint.clone()])
        .deadline(Duration::from_secs(30))
        .build()
        .expect("client");
    reads_what_was_written(version, &client).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_directory_of_every_format_opens_and_serves_what_was_written() {
    for version in versions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = data_of(version, dir.path());
        let node = spawn(&data, &dir.path().join("node.log"));
        serves(&node, version).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unversioned_data_directory_is_migrated_and_stamped() {
    let newest = *versions().last().expect("a fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_of(newest, dir.path());
    stamp(&data, None);
    let log = dir.path().join("node.log");
    let node = spawn(&data, &log);
    serves(&node, newest).await;
    drop(node);
    let said = std::fs::read_to_string(&log).expect("log");
    assert!(said.contains("stored format 0"), "{said}");
    assert_eq!(stamped(&data), Some(newest), "stamped with the current version");
}

/// Every file of a directory and its bytes, but RocksDB's info logs
/// (`LOG*`, which any open writes).
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read") {
        let e = e.expect("entry");
        if e.file_name().to_string_lossy().starts_with("LOG") {
            continue;
        }
        if e.file_type().expect("type").is_dir() {
            out.extend(contents(&e.path()));
        } else {
            out.push((e.path(), std::fs::read(e.path()).expect("read")));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_directory_of_a_newer_format_is_refused_naming_both_versions() {
    let newest = *versions().last().expect("a fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_of(newest, dir.path());
    stamp(&data, Some(newest + 1));
    let before = contents(&data);
    let log = dir.path().join("node.log");
    let mut node = spawn(&data, &log);
    let status = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(s) = node.child.try_wait().expect("wait") {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the node exits");
    assert!(!status.success());
    let said = std::fs::read_to_string(&log).expect("log");
    assert!(
        said.contains(&format!("stored format version {}", newest + 1)),
        "{said}"
    );
    assert!(said.contains(&format!("reads versions up to {newest}")), "{said}");
    assert!(contents(&data) == before, "the refused directory was written to");
}

/// A peer that answers the clock probe saying another peer protocol.
struct OtherProtocol;

type Answer<T> = Result<tonic::Response<T>, tonic::Status>;

#[tonic::async_trait]
impl ipb::raft_server::Raft for OtherProtocol {
    async fn append_entries(&self, _: tonic::Request<ipb::AppendEntriesRequest>) -> Answer<ipb::AppendEntriesResponse> {
        Err(tonic::Status::unimplemented("another protocol"))
    }
    async fn vote(&self, _: tonic::Request<ipb::VoteRequest>) -> Answer<ipb::VoteResponse> {
        Err(tonic::Status::unimplemented("another protocol"))
    }
    async fn install_snapshot(
        &self,
        _: tonic::Request<tonic::Streaming<ipb::SnapshotChunk>>,
    ) -> Answer<ipb::InstallSnapshotResponse> {
        Err(tonic::Status::unimplemented("another protocol"))
    }
    async fn forward(&self, _: tonic::Request<ipb::ForwardRequest>) -> Answer<ipb::ForwardResponse> {
        Err(tonic::Status::unimplemented("another protocol"))
    }
    async fn read_index(&self, _: tonic::Request<ipb::ReadIndexRequest>) -> Answer<ipb::ReadIndexResponse> {
        Err(tonic::Status::unimplemented("another protocol"))
    }
    async fn elect_now(&self, _: tonic::Request<ipb::ElectNowRequest>) -> Answer<ipb::ElectNowResponse> {
        Err(tonic::Status::unimplemented("another protocol"))
    }
    async fn clock_probe(&self, _: tonic::Request<ipb::ClockProbeRequest>) -> Answer<ipb::ClockProbeResponse> {
        let wall_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time")
            .as_millis() as i64;
        Ok(tonic::Response::new(ipb::ClockProbeResponse {
            node_id: 2,
            wall_ms,
            protocol_version: 99,
            ..Default::default()
        }))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_that_speaks_another_protocol_is_named_in_status_with_the_reason() {
    let (port, peer_port) = (free_port(), free_port());
    let peer_addr: std::net::SocketAddr = format!("127.0.0.1:{peer_port}").parse().expect("addr");
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ipb::raft_server::RaftServer::new(OtherProtocol))
            .serve(peer_addr),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let log = std::fs::File::create(dir.path().join("node.log")).expect("log");
    let child = Command::new(handlestore_bin())
        .args(["node", "--id", "1", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data")
        .arg(dir.path().join("data"))
        .args(["--initial-cluster", &format!("1=127.0.0.1:{port},2={peer_addr}")])
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn node");
    let _node = Node {
        child,
        endpoint: format!("127.0.0.1:{port}"),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let problem = loop {
        if let Ok(mut admin) = AdminClient::connect(format!("http://127.0.0.1:{port}")).await
            && let Ok(s) = admin.status(pb::StatusRequest {}).await
        {
            let s = s.into_inner();
            assert_eq!(s.protocol_version, 2, "this build speaks peer protocol 2");
            if let Some(p) = s.peer_protocols.iter().find(|p| p.id == 2 && !p.problem.is_empty()) {
                assert_eq!(p.version, Some(99));
                break p.problem.clone();
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "status never named the peer");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(problem.contains("peer protocol 99"), "{problem}");
    let said = std::fs::read_to_string(dir.path().join("node.log")).expect("log");
    assert!(said.contains("peer protocol 99"), "the log says it too: {said}");
}
