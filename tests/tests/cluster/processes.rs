//! The two ways to run nodes besides a full cluster: `handlestore dev` (three
//! nodes in one command, Ctrl-C, resume) and a single node without
//! `--initial-cluster`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use handlestore_client::{Client, ClientTls, ClusterHandleStore, HandleStore, Ttl};
use handlestore_tests::{free_port, free_port_run, handlestore_bin};
use serde_json::{Value, json};

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(ok.success());
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("process did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills the process if the test fails before stopping it.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

async fn mint_until_ready(store: &ClusterHandleStore<Value>, value: Value) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match store.mint(value.clone(), Ttl::Never).await {
            Ok(id) => return id,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not ready yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cluster never became ready: {e}"),
        }
    }
}

/// Waits for the dev cluster to keep root's token, and reads it.
fn root_token(data: &std::path::Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(t) = std::fs::read_to_string(data.join("root.token")) {
            return t.trim().to_string();
        }
        assert!(Instant::now() < deadline, "dev never kept root's token");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The client certificate `dev` writes beside its nodes' (`client-root`,
/// signed by the same CA) tries every Raft protocol on each node's peer
/// port: all refused, and no node takes the made-up term.
async fn no_raft_for_the_dev_client_certificate(
    data: &std::path::Path,
    peer_base: u16,
    node: impl Fn(usize) -> Client,
) {
    use handlestore_proto::v1 as pb;
    use handlestore_tests::peer_attack::{ATTACK_TERM, Identity, assert_all_refused, try_everything};
    let status = |i: usize| {
        let client = node(i);
        async move {
            let ch = client.channel(0).expect("channel");
            pb::admin_client::AdminClient::new(ch)
                .status(pb::StatusRequest {})
                .await
                .expect("status")
                .into_inner()
        }
    };
    let certs = data.join("certs");
    let (ca, cert, key) = (
        certs.join("ca.pem"),
        certs.join("client-root.pem"),
        certs.join("client-root-key.pem"),
    );
    let who = Identity {
        ca: &ca,
        cert: &cert,
        key: &key,
    };
    for i in 0..3u16 {
        let outcomes = try_everything(&who, &format!("127.0.0.1:{}", peer_base + i), 1).await;
        assert_all_refused("dev's client certificate", &outcomes);
    }
    for i in 0..3 {
        let s = status(i).await;
        assert!(
            s.term < ATTACK_TERM && s.leader_id != 0,
            "node {} took a made-up vote: {s:?}",
            i + 1
        );
    }
}

/// `handlestore dev` is secured by default (TLS, peer mTLS, auth with
/// root's token kept in its data), stops on Ctrl-C and resumes from its
/// data, token and certificates included.
#[tokio::test(flavor = "multi_thread")]
async fn dev_runs_three_nodes_stops_on_ctrl_c_and_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, peer_base) = (free_port_run(3), free_port_run(3));
    let data = dir.path().join("dev");
    let start = || {
        Command::new(handlestore_bin())
            .args(["dev", "--base-port", &base.to_string()])
            .args(["--peer-base-port", &peer_base.to_string(), "--data"])
            .arg(&data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn dev")
    };
    let endpoints: Vec<String> = (0..3).map(|i| format!("https://127.0.0.1:{}", base + i)).collect();
    let ca = data.join("certs").join("ca.pem");
    let client_of = |endpoints: Vec<String>, token: Option<&str>| {
        let mut b = Client::builder(endpoints).tls(ClientTls::from_files(&ca, None, None).expect("the dev CA"));
        if let Some(t) = token {
            b = b.token(t);
        }
        b.build().expect("client")
    };

    let mut dev = Guard(Some(start()));
    let token = root_token(&data);
    let store: ClusterHandleStore<Value> = client_of(endpoints.clone(), Some(&token)).handle_store("dev").build();
    let id = mint_until_ready(&store, json!({"kept": true})).await;
    let anonymous: ClusterHandleStore<Value> = client_of(endpoints.clone(), None).handle_store("dev").build();
    let e = anonymous.get(&id).await.expect_err("auth is on");
    assert!(matches!(e, handlestore_client::Error::Unauthenticated(_)), "{e:?}");
    // Every node answers: all three are up.
    for e in &endpoints {
        let one: ClusterHandleStore<Value> = client_of(vec![e.clone()], Some(&token)).handle_store("dev").build();
        assert_eq!(one.get(&id).await.expect("get"), Some(json!({"kept": true})), "via {e}");
    }
    no_raft_for_the_dev_client_certificate(&data, peer_base, |i| {
        client_of(vec![endpoints[i].clone()], Some(&token))
    })
    .await;
    let child = dev.0.as_mut().expect("running");
    signal(child, "INT");
    let st = wait_exit(child, Duration::from_secs(30));
    assert!(st.success(), "Ctrl-C stops dev cleanly: {st}");
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().expect("stdout"), &mut out).expect("read stdout");
    for e in &endpoints {
        assert!(out.contains(e.as_str()), "dev prints the endpoint {e}:\n{out}");
    }
    assert!(
        out.contains("export HANDLESTORE_TOKEN_FILE="),
        "dev says how to use root's token:\n{out}"
    );
    assert!(!out.contains(&token), "dev never prints the token itself");
    dev.0 = None;
    for i in 0..3 {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", base + i)).is_err(),
            "node on port {} stopped with dev",
            base + i
        );
    }

    // Run again: same data.
    let mut dev = Guard(Some(start()));
    let deadline = Instant::now() + Duration::from_secs(30);
    let got = loop {
        match store.get(&id).await {
            Ok(v) => break v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not ready yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("restarted dev cluster never answered: {e}"),
        }
    };
    assert_eq!(
        got,
        Some(json!({"kept": true})),
        "a restarted dev cluster resumes from its data"
    );
    assert_eq!(root_token(&data), token, "and keeps root's token");
    let child = dev.0.as_mut().expect("running");
    signal(child, "INT");
    assert!(wait_exit(child, Duration::from_secs(30)).success());
    dev.0 = None;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_without_initial_cluster_is_a_one_node_cluster() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    // The node's log goes to a file, shown if it does not stop cleanly.
    let log = |run: u32| logs.path().join(format!("node-{run}.log"));
    let start = |run: u32| {
        Command::new(handlestore_bin())
            .args(["node", "--id", "1", "--listen", &format!("127.0.0.1:{port}"), "--data"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log(run)).expect("log file"))
            .spawn()
            .expect("spawn node")
    };
    let store: ClusterHandleStore<Value> = Client::builder([format!("http://127.0.0.1:{port}")])
        .build()
        .expect("client")
        .handle_store("single")
        .build();
    let mut node = Guard(Some(start(1)));
    let id = mint_until_ready(&store, json!(1)).await;
    let child = node.0.as_mut().expect("running");
    signal(child, "TERM");
    let st = wait_exit(child, Duration::from_secs(30));
    assert!(
        st.success(),
        "SIGTERM stops a node cleanly, but it ended with {st}; its log:\n{}",
        std::fs::read_to_string(log(1)).unwrap_or_default()
    );
    node.0 = Some(start(2));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match store.get(&id).await {
            Ok(v) => {
                assert_eq!(v, Some(json!(1)), "the node restarted from its data dir");
                break;
            }
            Err(e) if Instant::now() < deadline => {
                eprintln!("not ready yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// `handlestore` commands run next to `./.handlestore-dev` and aimed at
/// the default endpoints use the dev cluster's CA and root's token by
/// themselves (as the README's quickstart promises); elsewhere they have
/// neither. Needs the dev cluster's default ports; skipped, saying so,
/// where something else holds them.
#[test]
fn commands_next_to_the_dev_cluster_find_its_ca_and_token() {
    let ports = [7401u16, 7402, 7403, 7411, 7412, 7413];
    if let Some(p) = ports
        .iter()
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", **p)).is_err())
    {
        eprintln!("skipping: port {p} of the dev cluster's defaults is in use here");
        return;
    }
    let here = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let cli = |dir: &std::path::Path, args: &[&str]| {
        let mut c = Command::new(handlestore_bin());
        c.args(args).current_dir(dir);
        for var in [
            "HANDLESTORE_ENDPOINTS",
            "HANDLESTORE_CACERT",
            "HANDLESTORE_CERT",
            "HANDLESTORE_KEY",
            "HANDLESTORE_TOKEN",
            "HANDLESTORE_TOKEN_FILE",
        ] {
            c.env_remove(var);
        }
        c
    };
    let dev = cli(here.path(), &["dev"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn dev");
    let mut dev = Guard(Some(dev));
    root_token(&here.path().join(".handlestore-dev"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let out = loop {
        let out = cli(here.path(), &["auth", "status"]).output().expect("run");
        if out.status.success() || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("you are: root"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let away = cli(elsewhere.path(), &["auth", "status"]).output().expect("run");
    assert!(
        !String::from_utf8_lossy(&away.stdout).contains("you are: root"),
        "away from the dev data, no credentials are found"
    );
    let child = dev.0.as_mut().expect("running");
    signal(child, "INT");
    assert!(wait_exit(child, Duration::from_secs(30)).success());
    dev.0 = None;
}
