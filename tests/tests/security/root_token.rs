//! `handlestore auth enable --root-token-file F` where F holds a token
//! made elsewhere (the Helm chart's Secret: no node can write one): the
//! cluster adopts it as root's, keeping its id and digest only, over TLS
//! as the chart's hook runs it; a malformed one is refused and changes
//! nothing; once auth is on, F is only checked.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use data_encoding::BASE32_NOPAD;
use handlestore_client::{Client, Error};
use handlestore_tests::TestCluster;
use handlestore_tests::tls::TestTls;

/// A one-node cluster with TLS, and its certificates.
async fn tls_cluster() -> (tempfile::TempDir, TestTls, TestCluster) {
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = TestTls::make(dir.path(), 1, false).expect("certificates");
    let cluster = TestCluster::builder(1).tls(tls.clone()).start().await.expect("cluster");
    (dir, tls, cluster)
}

/// `handlestore ARGS` against the cluster, with its CA and no token of
/// the environment's.
fn cli(cluster: &TestCluster, tls: &TestTls, args: &[&str]) -> Output {
    std::process::Command::new(handlestore_tests::handlestore_bin())
        .args(args)
        .arg("--endpoints")
        .arg(cluster.endpoints().join(","))
        .arg("--cacert")
        .arg(tls.path("ca.pem"))
        .args(["--timeout", "20s"])
        .env_remove("HANDLESTORE_TOKEN")
        .env_remove("HANDLESTORE_TOKEN_FILE")
        .output()
        .expect("run handlestore")
}

fn enable(cluster: &TestCluster, tls: &TestTls, file: &Path) -> Output {
    cli(
        cluster,
        tls,
        &["auth", "enable", "--root-token-file", file.to_str().expect("path")],
    )
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A token made as the Helm chart makes one: `hs1_`, then 10 and 32
/// random bytes in unpadded base32.
fn chart_token() -> String {
    let id: [u8; 10] = rand::random();
    let secret: [u8; 32] = rand::random();
    format!("hs1_{}_{}", BASE32_NOPAD.encode(&id), BASE32_NOPAD.encode(&secret))
}

/// A read-only file holding `token`, as a mounted Secret is.
fn secret_file(dir: &Path, name: &str, token: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, format!("{token}\n")).expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).expect("chmod");
    file
}

fn client(cluster: &TestCluster, tls: &TestTls, token: Option<&str>) -> Client {
    let mut b = Client::builder(cluster.endpoints())
        .tls(tls.client())
        .deadline(Duration::from_secs(10));
    if let Some(t) = token {
        b = b.token(t);
    }
    b.build().expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_made_elsewhere_becomes_roots() {
    let (dir, tls, cluster) = tls_cluster().await;
    let token = chart_token();
    let file = secret_file(dir.path(), "root.token", &token);

    let out = enable(&cluster, &tls, &file);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains(&token), "the token is not printed: {}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        format!("{token}\n"),
        "the file is left as it was"
    );

    let root = client(&cluster, &tls, Some(&token));
    let status = root.auth_status().await.expect("status");
    assert!(status.enabled);
    assert_eq!(status.user, "root", "the adopted token is root's");
    let users = root.user_list().await.expect("root lists users");
    assert!(users.iter().any(|u| u.name == "root" && u.has_token), "{users:?}");
    match client(&cluster, &tls, None).user_list().await {
        Err(Error::Unauthenticated(_)) => {}
        other => panic!("without a token, once auth is on: {other:?}"),
    }
    match client(&cluster, &tls, Some(&chart_token())).user_list().await {
        Err(Error::Unauthenticated(_)) => {}
        other => panic!("another token: {other:?}"),
    }

    // The hook runs after every upgrade: again, it checks and changes nothing.
    let again = enable(&cluster, &tls, &file);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(
        root.auth_status().await.expect("status").user,
        "root",
        "the same token is still root's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_token_is_refused_and_changes_nothing() {
    let (dir, tls, cluster) = tls_cluster().await;
    let good = chart_token();
    // The secret's last character carries 1 bit and 4 bits that must be
    // zero: 'B' sets one of those.
    let trailing_bits = format!("{}B", &good[..good.len() - 1]);
    let malformed = [
        "not a token".to_string(),
        "hs1_AAAA_BBBB".to_string(),
        good.to_lowercase(),
        good.replace("hs1_", "hs2_"),
        format!("{good}A"),
        trailing_bits,
    ];
    let anonymous = client(&cluster, &tls, None);
    for (i, bad) in malformed.iter().enumerate() {
        let file = secret_file(dir.path(), &format!("bad-{i}.token"), bad);
        let out = enable(&cluster, &tls, &file);
        assert!(!out.status.success(), "{bad:?} accepted: {}", text(&out));
        assert!(
            text(&out).contains("is not a handlestore token"),
            "{bad:?}: {}",
            text(&out)
        );
        match anonymous.auth_enable_with_root_token(bad).await {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("hs1_<id>_<secret>"), "{m}"),
            other => panic!("{bad:?} over the API: {other:?}"),
        }
        let status = anonymous.auth_status().await.expect("status");
        assert!(!status.enabled, "{bad:?} turned auth on");
        let users = anonymous.user_list().await.expect("auth off: anyone lists users");
        assert!(users.is_empty(), "{bad:?} made a user: {users:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_root_has_a_token_another_one_is_refused() {
    let (dir, tls, cluster) = tls_cluster().await;
    let token = chart_token();
    let file = secret_file(dir.path(), "root.token", &token);
    let out = enable(&cluster, &tls, &file);
    assert!(out.status.success(), "{}", text(&out));

    // Auth on: a file holding another token is checked, and refused.
    let other = secret_file(dir.path(), "other.token", &chart_token());
    let out = enable(&cluster, &tls, &other);
    assert!(!out.status.success(), "another token accepted: {}", text(&out));
    assert!(text(&out).contains("does not hold root's token"), "{}", text(&out));

    // Auth off again, root keeping its token: another token does not turn
    // auth on (its holder would not be root), nor replace root's.
    let root = client(&cluster, &tls, Some(&token));
    root.auth_disable().await.expect("disable");
    let out = enable(&cluster, &tls, &other);
    assert!(!out.status.success(), "another token accepted: {}", text(&out));
    assert!(text(&out).contains("root has a token already"), "{}", text(&out));
    let anonymous = client(&cluster, &tls, None);
    assert!(
        !anonymous.auth_status().await.expect("status").enabled,
        "auth stayed off"
    );

    // Root's own token turns it back on.
    let out = enable(&cluster, &tls, &file);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(root.auth_status().await.expect("status").user, "root");
}
