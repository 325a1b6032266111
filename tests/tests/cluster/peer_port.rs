//! Peers apart from clients (`--peer-listen`): node-to-node traffic goes to
//! a port of its own, and the client port refuses every Raft protocol. The
//! attack this closes: one AppendEntries carrying a made-up vote (term
//! 1000), sent with no credentials to a follower's client port, moved the
//! cluster's term to 1001.

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use handlestore_tests::peer_attack::{ATTACK_TERM, Identity, assert_all_refused, try_everything};
use handlestore_tests::tls::TestTls;
use handlestore_tests::{TestCluster, retry_unavailable};
use ipb::raft_client::RaftClient;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn cluster() -> TestCluster {
    TestCluster::builder(3).peer_ports(true).start().await.expect("cluster")
}

/// A vote of term `term` from node `from`, as an attacker makes one up.
fn made_up_vote(term: u64, from: u64) -> ipb::Vote {
    ipb::Vote {
        leader_id: Some(ipb::LeaderId { term, node_id: from }),
        committed: true,
    }
}

fn some_follower(leader: u64) -> u64 {
    (1..=3).find(|n| *n != leader).expect("a follower")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_port_refuses_every_raft_rpc() {
    let cluster = cluster().await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let follower = some_follower(leader);
    let term = cluster.status(follower).await.expect("status").term;

    let mut raft = RaftClient::connect(cluster.node(follower).endpoint())
        .await
        .expect("connect to the client port");
    let append = ipb::AppendEntriesRequest {
        vote: Some(made_up_vote(1000, leader)),
        ..Default::default()
    };
    let s = raft
        .append_entries(append)
        .await
        .expect_err("a client port serves no Raft");
    assert_eq!(s.code(), tonic::Code::Unimplemented, "{s:?}");
    let vote = ipb::VoteRequest {
        vote: Some(made_up_vote(1000, follower)),
        last_log_id: None,
        cluster_id: String::new(),
    };
    let s = raft.vote(vote).await.expect_err("no votes on a client port");
    assert_eq!(s.code(), tonic::Code::Unimplemented, "{s:?}");
    let probe = ipb::ClockProbeRequest {
        from: 9,
        ..Default::default()
    };
    let s = raft.clock_probe(probe).await.expect_err("no clock probes either");
    assert_eq!(s.code(), tonic::Code::Unimplemented, "{s:?}");
    let forward = ipb::ForwardRequest { command: None };
    let s = raft.forward(forward).await.expect_err("no forwarded writes");
    assert_eq!(s.code(), tonic::Code::Unimplemented, "{s:?}");

    // The Raft wire on the client port: closed without a word.
    let mut conn = tokio::net::TcpStream::connect(&cluster.node(follower).addr)
        .await
        .expect("connect");
    conn.write_all(b"HSRAFT/1").await.expect("send the wire's greeting");
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the client port answered the Raft wire: {read:?}"
    );
    assert!(
        cluster
            .log(follower)
            .contains("refused a Raft connection on the client port"),
        "the refusal is logged"
    );

    let now = cluster.status(follower).await.expect("status");
    assert_eq!(now.term, term, "the term did not move");
    assert_eq!(
        cluster.wait_leader(Duration::from_secs(5)).await.expect("leader"),
        leader
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_peer_ports_writes_reads_and_fails_over() {
    let mut cluster = cluster().await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let status = cluster.status(leader).await.expect("status");
    for m in &status.members {
        assert_eq!(
            m.peer_addr,
            cluster.node(m.id).peer_addr,
            "member {} peers at its peer port",
            m.id
        );
        assert_eq!(m.addr, cluster.node(m.id).addr);
    }
    assert_eq!(
        status.leader_addr,
        cluster.node(leader).addr,
        "clients are told the client port"
    );

    // A write on a follower is forwarded over the peer port; a
    // linearizable read on the other follower asks the leader for a read
    // index over it.
    let follower = some_follower(leader);
    let other = (1..=3).find(|n| *n != leader && *n != follower).expect("another");
    let on_follower: ClusterHandleStore<Value> = cluster.client_for(follower).handle_store("carts").build();
    let id = on_follower
        .mint(json!({"n": 1}), Ttl::Default)
        .await
        .expect("mint on a follower");
    let on_other: ClusterHandleStore<Value> = cluster
        .client_for(other)
        .handle_store("carts")
        .consistency(Consistency::Linearizable)
        .build();
    assert_eq!(on_other.get(&id).await.expect("get"), Some(json!({"n": 1})));

    cluster.kill(leader);
    let store: ClusterHandleStore<Value> = cluster.client_for(follower).handle_store("carts").build();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let second = loop {
        match store.mint(json!({"n": 2}), Ttl::Default).await {
            Ok(id) => break id,
            Err(e) => assert!(std::time::Instant::now() < deadline, "no write after failover: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(store.get(&id).await.expect("get"), Some(json!({"n": 1})));
    assert_eq!(store.get(&second).await.expect("get"), Some(json!({"n": 2})));
    cluster.restart(leader).expect("restart");
    let back = cluster.wait_leader(Duration::from_secs(30)).await.expect("leader");
    let status = cluster.status(back).await.expect("status");
    cluster
        .wait_applied(leader, status.applied_index, Duration::from_secs(30))
        .await
        .expect("the restarted node catches up over the peer port");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_with_a_peer_port_is_added_and_catches_up() {
    let mut cluster = cluster().await;
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("carts").build();
    let id = store.mint(json!({"before": "join"}), Ttl::Default).await.expect("mint");
    let new = cluster.spawn_extra().expect("spawn a fourth node");
    let node = cluster.node(new);
    let member = format!("{}/{}", node.addr, node.peer_addr);
    let out = std::process::Command::new(handlestore_tests::handlestore_bin())
        .args(["member", "--endpoints", &cluster.endpoints().join(",")])
        .args(["add", &new.to_string(), &member])
        .output()
        .expect("run handlestore member add");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{printed} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.contains(&format!("peers at {}", node.peer_addr)), "{printed}");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let applied = cluster.status(leader).await.expect("status").applied_index;
    cluster
        .wait_applied(new, applied, Duration::from_secs(30))
        .await
        .expect("the learner catches up");
    let on_learner: ClusterHandleStore<Value> = cluster
        .client_for(new)
        .handle_store("carts")
        .consistency(Consistency::Linearizable)
        .build();
    assert_eq!(on_learner.get(&id).await.expect("get"), Some(json!({"before": "join"})));
}

/// Membership changes on the leader, as `handlestore member` makes them.
async fn change(cluster: &TestCluster, voters: Vec<u64>) {
    let req = pb::ChangeMembershipRequest { voters, retain: false };
    retry_unavailable(|| {
        let (c, req) = (cluster, req.clone());
        async move { c.leader_admin().await?.change_membership(req).await }
    })
    .await
    .expect("change membership");
}

/// Only members speak Raft on the peer port, with no flag set: the client
/// certificate `handlestore certs` makes beside the nodes', a node
/// certificate of the same CA that names no member, and the certificate of
/// a member that was removed each try every Raft protocol on every node's
/// peer port, and are refused; no term or leader moves, and the members
/// still replicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_members_speak_raft_on_the_peer_port_whatever_the_ca_signed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = TestTls::make(dir.path(), 4, false).expect("certificates for nodes 1 to 4");
    tls.add_client("mallory").expect("another client");
    tls.add_node(9).expect("a node certificate naming no member");
    let mut cluster = TestCluster::builder(3).tls(tls.clone()).start().await.expect("cluster");
    let new = cluster.spawn_extra().expect("node 4");
    let node = cluster.node(new);
    let add = pb::AddLearnerRequest {
        id: new,
        addr: node.addr.clone(),
        peer_addr: node.peer_addr.clone(),
        blocking: true,
    };
    retry_unavailable(|| {
        let (c, req) = (&cluster, add.clone());
        async move { c.leader_admin().await?.add_learner(req).await }
    })
    .await
    .expect("node 4 joins");
    change(&cluster, vec![1, 2, 3, new]).await;
    change(&cluster, vec![1, 2, 3]).await;
    cluster.kill(new);
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("members").build();
    let before = store.mint(json!("before"), Ttl::Default).await.expect("mint");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let term = cluster.status(leader).await.expect("status").term;
    assert!(term < ATTACK_TERM);

    for stem in ["client-root", "client-mallory", "node-9", "node-4"] {
        let (ca, cert, key) = tls.identity(stem);
        let who = Identity {
            ca: &ca,
            cert: &cert,
            key: &key,
        };
        for n in 1..=3 {
            let outcomes = try_everything(&who, &cluster.node(n).peer_addr, 9).await;
            assert_all_refused(&format!("{stem} at node {n}"), &outcomes);
        }
    }
    // A made-up vote that got through would have moved a term to the
    // attacker's (an election of the busy machine's own may move it by
    // one or two).
    for n in 1..=3 {
        let s = cluster.status(n).await.expect("status");
        assert!(
            s.term < ATTACK_TERM && s.term <= term + 2,
            "node {n} took the made-up term: {s:?}"
        );
        assert_ne!(s.leader_id, 0, "node {n} knows the leader");
    }
    assert!(
        (1..=3).any(|n| cluster.log(n).contains("refused a peer")),
        "refusals are logged"
    );
    // The members still replicate, and read alike on every node.
    let after = store.mint(json!("after"), Ttl::Default).await.expect("mint");
    for n in 1..=3 {
        let on: ClusterHandleStore<Value> = cluster
            .client_for(n)
            .handle_store("members")
            .consistency(Consistency::Linearizable)
            .build();
        assert_eq!(on.get(&before).await.expect("get"), Some(json!("before")), "node {n}");
        assert_eq!(on.get(&after).await.expect("get"), Some(json!("after")), "node {n}");
    }
}
