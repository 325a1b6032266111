//! TLS on the client port, with real processes and certificates made by
//! `handlestore certs`: TLS clients are served; a client in the clear, one
//! that does not trust the node's CA, one without a client certificate
//! where one is required, and one whose certificate is from another CA or
//! expired, all get a clear error (not a hang), and the node serves on.
//! New certificates are taken without a restart. Protected mode keeps a
//! node without TLS on loopback.

use std::time::{Duration, Instant};

use handlestore_client::{Client, ClientTls, ClusterHandleStore, Error, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use handlestore_tests::tls::TestTls;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn tls_cluster(client_certs: bool) -> (tempfile::TempDir, TestTls, TestCluster) {
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = TestTls::make(dir.path(), 3, client_certs).expect("certificates");
    let cluster = TestCluster::builder(3).tls(tls.clone()).start().await.expect("cluster");
    (dir, tls, cluster)
}

/// A client of node 1 with `tls` (or none), with a short deadline.
fn client(cluster: &TestCluster, tls: Option<ClientTls>, scheme: &str) -> Client {
    let mut b = Client::builder([format!("{scheme}://{}", cluster.node(1).addr)]).deadline(Duration::from_secs(5));
    if let Some(t) = tls {
        b = b.tls(t);
    }
    b.build().expect("client")
}

/// Mints through `client`: the error, and how long it took to come.
async fn try_mint(client: &Client) -> (Result<String, Error>, Duration) {
    let store: ClusterHandleStore<Value> = client.handle_store("tls").build();
    let t = Instant::now();
    (store.mint(json!({"x": 1}), Ttl::Default).await, t.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_clients_are_served_and_others_get_a_clear_error() {
    let (_dir, tls, cluster) = tls_cluster(false).await;
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("tls").build();
    let id = store
        .mint(json!({"cart": [1]}), Ttl::Default)
        .await
        .expect("mint over TLS");
    assert_eq!(store.get(&id).await.expect("get"), Some(json!({"cart": [1]})));

    // In the clear, to a TLS port: told so at once, not retried.
    let (res, took) = try_mint(&client(&cluster, None, "http")).await;
    match res {
        Err(Error::Unauthenticated(m)) => assert!(m.contains("requires TLS"), "{m}"),
        other => panic!("a client in the clear got {other:?}"),
    }
    assert!(
        took < Duration::from_secs(4),
        "answered, not retried until the deadline ({took:?})"
    );
    // Plain HTTP/1.1 (a health check in the clear) gets a 400 that says so.
    let mut conn = tokio::net::TcpStream::connect(&cluster.node(1).addr)
        .await
        .expect("connect");
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("send");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.expect("read");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("requires TLS"), "{answer}");

    // A CA the node's certificate is not from: refused, with the reason.
    let other = tempfile::tempdir().expect("tempdir");
    let other_tls = TestTls::make(other.path(), 1, false).expect("another CA");
    let (res, took) = try_mint(&client(&cluster, Some(other_tls.client()), "https")).await;
    match res {
        Err(Error::Unauthenticated(m)) => assert!(m.contains("TLS") && m.contains("certificate"), "{m}"),
        other => panic!("a client of another CA got {other:?}"),
    }
    assert!(took < Duration::from_secs(4), "not retried ({took:?})");

    // The node serves on, and the CLI speaks TLS with --cacert.
    assert_eq!(store.get(&id).await.expect("get"), Some(json!({"cart": [1]})));
    let out = std::process::Command::new(handlestore_tests::handlestore_bin())
        .args(["status", "--endpoints", &cluster.endpoints().join(",")])
        .arg("--cacert")
        .arg(tls.path("ca.pem"))
        .output()
        .expect("handlestore status");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(cluster.log(1).contains("clients=\"TLS\"") || cluster.log(1).contains("clients=TLS"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_are_required_where_the_node_asks() {
    let (dir, tls, cluster) = tls_cluster(true).await;
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("tls").build();
    store
        .mint(json!({"with": "cert"}), Ttl::Default)
        .await
        .expect("with the root client's certificate");

    let (res, took) = try_mint(&client(&cluster, Some(tls.client_as(None)), "https")).await;
    match res {
        Err(Error::Unauthenticated(m)) => assert!(m.contains("CertificateRequired"), "{m}"),
        other => panic!("a client without a certificate got {other:?}"),
    }
    assert!(took < Duration::from_secs(4), "not retried ({took:?})");

    // A client certificate from another CA.
    let other = tempfile::tempdir().expect("tempdir");
    let other_tls = TestTls::make(other.path(), 1, true).expect("another CA");
    let foreign = ClientTls::from_files(
        &tls.path("ca.pem"),
        Some(&other_tls.path("client-root.pem")),
        Some(&other_tls.path("client-root-key.pem")),
    )
    .expect("tls");
    let (res, _) = try_mint(&client(&cluster, Some(foreign), "https")).await;
    assert!(
        matches!(res, Err(Error::Unauthenticated(_))),
        "a certificate of another CA is refused: {res:?}"
    );

    // An expired certificate of the right CA.
    let expired = expired_client_cert(dir.path());
    let (res, _) = try_mint(&client(&cluster, Some(expired), "https")).await;
    match res {
        Err(Error::Unauthenticated(m)) => assert!(m.contains("CertificateExpired"), "{m}"),
        other => panic!("an expired certificate got {other:?}"),
    }

    // A client added later, by the same CA, is let in.
    tls.add_client("cart-server").expect("another client");
    let (res, _) = try_mint(&client(&cluster, Some(tls.client_as(Some("cart-server"))), "https")).await;
    res.expect("a new client of the same CA");
}

/// A client certificate of the cluster's CA that expired yesterday.
fn expired_client_cert(dir: &std::path::Path) -> ClientTls {
    let ca_key =
        rcgen::KeyPair::from_pem(&std::fs::read_to_string(dir.join("ca-key.pem")).expect("ca key")).expect("ca key");
    let ca_pem = std::fs::read_to_string(dir.join("ca.pem")).expect("ca");
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name.push(rcgen::DnType::CommonName, "expired");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(10);
    params.not_after = now - time::Duration::days(1);
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("sign");
    ClientTls::new(
        ca_pem.as_bytes(),
        Some((cert.pem().as_bytes(), key.serialize_pem().as_bytes())),
    )
    .expect("tls")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_certificates_are_taken_without_a_restart() {
    let (dir, tls, cluster) = tls_cluster(false).await;
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("tls").build();
    let id = store.mint(json!({"n": 1}), Ttl::Default).await.expect("mint");
    // A new CA, and node 1's certificate from it, written over the old.
    let fresh = tempfile::tempdir().expect("tempdir");
    let fresh_tls = TestTls::make(fresh.path(), 1, false).expect("new CA");
    for f in ["node-1.pem", "node-1-key.pem"] {
        std::fs::copy(fresh_tls.path(f), dir.path().join(f)).expect("replace");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let on_node1: ClusterHandleStore<Value> = client(&cluster, Some(fresh_tls.client()), "https")
            .handle_store("tls")
            .build();
        if let Ok(got) = on_node1.get(&id).await {
            assert_eq!(got, Some(json!({"n": 1})));
            break;
        }
        assert!(Instant::now() < deadline, "node 1 never served its new certificate");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        cluster.log(1).contains("TLS certificates reloaded"),
        "the reload is logged"
    );
    // The old CA no longer trusts node 1.
    let (res, _) = try_mint(&client(&cluster, Some(tls.client()), "https")).await;
    assert!(res.is_err(), "the old CA is not trusted for node 1's new certificate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tls_a_node_keeps_to_loopback_unless_told_insecure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(handlestore_tests::handlestore_bin())
        .args(["node", "--id", "1", "--listen", "0.0.0.0:0", "--data"])
        .arg(dir.path().join("d"))
        .output()
        .expect("run a node");
    assert_eq!(out.status.code(), Some(2), "refused to start");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--insecure") && said.contains("--tls-cert"), "{said}");
    assert!(!dir.path().join("d").exists(), "nothing was created");

    let cluster = TestCluster::start(1).await.expect("a loopback node");
    assert!(cluster.log(1).contains("protected mode"), "it says so when it starts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_speak_mutual_tls_and_let_in_only_allowed_peers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = TestTls::make(dir.path(), 3, false).expect("certificates");
    let mut cluster = TestCluster::builder(3)
        .tls(tls.clone())
        .args(["--peer-allowed-names", "node-1,node-2,node-3"])
        .start()
        .await
        .expect("a cluster whose peers speak mutual TLS");
    assert!(cluster.log(1).contains("mutual TLS"), "{}", cluster.log_tail(1, 20));
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let follower = (1..=3).find(|n| *n != leader).expect("a follower");
    // A write on a follower goes to the leader over the peer port.
    let on_follower: ClusterHandleStore<Value> = cluster.client_for(follower).handle_store("tls").build();
    let id = on_follower.mint(json!({"n": 1}), Ttl::Default).await.expect("mint");

    let vote = || handlestore_proto::internal::v1::VoteRequest {
        vote: Some(handlestore_proto::internal::v1::Vote {
            leader_id: Some(handlestore_proto::internal::v1::LeaderId {
                term: 1000,
                node_id: follower,
            }),
            committed: false,
        }),
        last_log_id: None,
        cluster_id: String::new(),
    };
    let peer_port = format!("https://{}", cluster.node(follower).peer_addr);
    // A client certificate of the cluster's CA is not a peer's.
    tls.add_client("intruder").expect("a client of the same CA");
    for who in [Some("intruder"), None] {
        let c = Client::builder([peer_port.clone()])
            .tls(tls.client_as(who))
            .build()
            .expect("client");
        let mut raft = handlestore_proto::internal::v1::raft_client::RaftClient::new(c.channel(0).expect("channel"));
        let s = raft.vote(vote()).await.expect_err("not a peer");
        assert_ne!(s.code(), tonic::Code::Ok, "{who:?}");
    }
    // In the clear: told the port requires TLS.
    let c = Client::builder([format!("http://{}", cluster.node(follower).peer_addr)])
        .build()
        .expect("client");
    let mut raft = handlestore_proto::internal::v1::raft_client::RaftClient::new(c.channel(0).expect("channel"));
    let s = raft.vote(vote()).await.expect_err("in the clear");
    assert_eq!(s.code(), tonic::Code::Unauthenticated, "{s:?}");
    assert!(
        cluster.log(follower).contains("refused a peer"),
        "the intruder is logged"
    );
    let term = cluster.status(follower).await.expect("status").term;
    assert!(term < 1000, "the term did not move: {term}");
    // The Raft wire inside TLS: the peers speak it; a client asking for it
    // on the client port (by ALPN, with the CA's trust) is turned away.
    assert!(
        !cluster.log(leader).contains("does not speak the Raft wire"),
        "AppendEntries take the wire inside mutual TLS"
    );
    let asked = wire_over_tls(&tls, &cluster.node(follower).addr).await;
    assert!(asked.is_err(), "the client port served the Raft wire: {asked:?}");
    assert!(
        cluster
            .log(follower)
            .contains("refused a Raft connection on the client port"),
        "{}",
        cluster.log_tail(follower, 20)
    );

    // Failover over mutual TLS, and the data is there.
    cluster.kill(leader);
    let store: ClusterHandleStore<Value> = cluster.client_for(follower).handle_store("tls").build();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match store.mint(json!({"n": 2}), Ttl::Default).await {
            Ok(_) => break,
            Err(e) => assert!(Instant::now() < deadline, "no write after failover: {e}"),
        }
    }
    assert_eq!(store.get(&id).await.expect("get"), Some(json!({"n": 1})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_command_asks_a_tls_node_over_https() {
    let (_dir, tls, cluster) = tls_cluster(true).await;
    let health = |extra: &[&str]| {
        std::process::Command::new(handlestore_tests::handlestore_bin())
            .args(["health", "--ready", "--url", &cluster.node(1).addr])
            .args(extra)
            .output()
            .expect("handlestore health")
    };
    let (ca, cert, key) = (
        tls.path("ca.pem"),
        tls.path("client-root.pem"),
        tls.path("client-root-key.pem"),
    );
    let (ca, cert, key) = (
        ca.to_str().expect("path"),
        cert.to_str().expect("path"),
        key.to_str().expect("path"),
    );
    let out = health(&["--cacert", ca, "--cert", cert, "--key", key]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ready"));
    // Without the client certificate the node requires: refused.
    let out = health(&["--cacert", ca]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    // In the clear: the node says it requires TLS.
    let out = health(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("requires TLS"));
}

/// Opens TLS to `addr` (trusting the test CA, no client certificate)
/// asking for the Raft wire by ALPN, and sends its greeting: the echo, or
/// why there was none.
async fn wire_over_tls(tls: &TestTls, addr: &str) -> std::io::Result<[u8; 8]> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(tls.path("ca.pem"))?;
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&ca) {
        roots
            .add(cert.map_err(std::io::Error::other)?)
            .map_err(std::io::Error::other)?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"hsraft/1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").map_err(std::io::Error::other)?;
    let mut s = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await?;
    s.write_all(b"HSRAFT/1").await?;
    let mut echo = [0u8; 8];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut echo))
        .await
        .map_err(std::io::Error::other)??;
    Ok(echo)
}
