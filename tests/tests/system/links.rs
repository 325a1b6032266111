//! `linkem` really degrades a link (src/linkem.rs, the user-space stand-in
//! for netem): in a network namespace whose link it holds, a TCP connect
//! and echo takes at least the delays it was given, nothing passes with
//! loss 1, and the link works again once restored. Without root (no
//! namespaces), skipped, saying why.

use std::time::{Duration, Instant};

use handlestore_tests::linkem::LinkParams;
use handlestore_tests::netns::{Direction, NetNs};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A TCP echo server on the bridge's host address, in the host namespace.
async fn echo_server(net: &NetNs) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind((net.host_ip().as_str(), 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (r, mut w) = conn.into_split();
                let mut line = String::new();
                if BufReader::new(r).read_line(&mut line).await.is_ok() {
                    let _ = w.write_all(line.as_bytes()).await;
                }
            });
        }
    });
    (addr, task)
}

/// From inside namespace `ns`: connects to `addr`, sends a line and reads
/// it back (bash's /dev/tcp), giving up after 3 s. Whether it got its line
/// back, and how long it took.
async fn round_trip(ns: &str, addr: std::net::SocketAddr) -> (bool, Duration) {
    let script = format!(
        "exec 3<>/dev/tcp/{}/{} && echo ping >&3 && read -r line <&3 && [ \"$line\" = ping ]",
        addr.ip(),
        addr.port()
    );
    let started = Instant::now();
    let status = tokio::process::Command::new("ip")
        .args(["netns", "exec", ns, "timeout", "3", "bash", "-c", &script])
        .status()
        .await
        .expect("ip netns exec");
    (status.success(), started.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn linkem_delays_drops_and_restores() {
    if let Err(why) = NetNs::available().and_then(|()| NetNs::links_available()) {
        eprintln!("skipped: {why}");
        return;
    }
    let mut net = NetNs::create().expect("bridge");
    net.add_node(1).expect("namespace");
    let ns = net.ns(1);
    let (addr, server) = echo_server(&net).await;
    let (ok, healthy) = round_trip(&ns, addr).await;
    assert!(ok, "the link works before it is degraded");

    // 200 ms each way: the SYN, the SYN-ACK, the line and its echo each
    // wait it out, one after the other.
    let delay = Duration::from_millis(200);
    let slow = LinkParams {
        delay,
        ..LinkParams::default()
    };
    net.degrade(1, &slow, Direction::Both).expect("degrade");
    let (ok, took) = round_trip(&ns, addr).await;
    assert!(ok, "a slow link still delivers");
    assert!(
        took >= delay * 4,
        "4 one-way delays of {delay:?}, but the round trip took {took:?} ({healthy:?} healthy)"
    );

    // Only what comes in: the SYN-ACK and the echo.
    net.degrade(1, &slow, Direction::In).expect("degrade");
    let (ok, took) = round_trip(&ns, addr).await;
    assert!(ok && took >= delay * 2, "2 one-way delays of {delay:?}: {ok}, {took:?}");

    let lost = LinkParams {
        loss: 1.0,
        ..LinkParams::default()
    };
    net.degrade(1, &lost, Direction::Both).expect("degrade");
    let (ok, took) = round_trip(&ns, addr).await;
    assert!(
        !ok,
        "nothing passes a link that loses every packet (gave up after {took:?})"
    );

    net.restore(1);
    let (ok, took) = round_trip(&ns, addr).await;
    assert!(ok, "the link works again once restored ({took:?})");
    server.abort();
}
