//! The Raft wire end to end on loopback: frames, the handshake, refusals,
//! held answers, the pool.

use handlestore_proto::internal::v1 as ipb;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use super::codec::read_frame;
use super::*;
use crate::raft::log::durability::Held;
use crate::raft::net::names::Names;

const MAX: usize = 1 << 20;

fn request(term: u64) -> ipb::AppendEntriesRequest {
    ipb::AppendEntriesRequest {
        vote: Some(ipb::Vote {
            leader_id: Some(ipb::LeaderId { term, node_id: 1 }),
            committed: true,
        }),
        ..Default::default()
    }
}

fn term_of(vote: Option<&ipb::Vote>) -> Option<u64> {
    vote.and_then(|v| v.leader_id.as_ref()).map(|l| l.term)
}

/// A listener that sniffs each connection and serves the Raft wire with
/// `answer`, or says what else arrived.
async fn server(
    answer: fn(ipb::AppendEntriesRequest) -> Result<ipb::AppendEntriesResponse, Refusal>,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<Protocol>) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let p = sniff(&s).await;
            let _ = tx.send(p);
            if p == Protocol::RaftWire {
                tokio::spawn(serve_tcp(s, MAX, Some, move |req| async move { answer(req) }));
            }
        }
    });
    (addr, rx)
}

/// Answers with the request's own vote, or refuses term 99.
fn echo_term(req: ipb::AppendEntriesRequest) -> Result<ipb::AppendEntriesResponse, Refusal> {
    if term_of(req.vote.as_ref()) == Some(99) {
        return Err(Refusal::Unavailable("shutting down".into()));
    }
    Ok(ipb::AppendEntriesResponse {
        result: req.vote.map(ipb::append_entries_response::Result::HigherVote),
    })
}

#[tokio::test]
async fn requests_and_answers_cross_one_connection_in_turn() {
    let (addr, mut seen) = server(echo_term).await;
    let mut conn = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    for term in 1..=50 {
        let resp = conn.call(&request(term)).await.expect("answer");
        let Some(ipb::append_entries_response::Result::HigherVote(vote)) = resp.result else {
            panic!("{resp:?}");
        };
        assert_eq!(term_of(Some(&vote)), Some(term));
    }
    assert_eq!(seen.recv().await, Some(Protocol::RaftWire));
    assert!(seen.try_recv().is_err(), "one connection for all calls");
}

#[tokio::test]
async fn the_pool_lends_one_connection_at_a_time_and_lets_one_caller_connect() {
    let (addr, mut seen) = server(echo_term).await;
    let pool = WirePool::default();
    let Taken::Connect(slot) = pool.take(&addr, 0) else {
        panic!("nothing open yet: connect");
    };
    assert!(
        matches!(pool.take(&addr, 0), Taken::Grpc),
        "one caller connects at a time"
    );
    let conn = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    assert!(!slot.finish(Connected::Yes));
    pool.give_back(&addr, conn);
    for term in 1..=3 {
        let Taken::Idle(mut conn) = pool.take(&addr, 0) else {
            panic!("the connection given back");
        };
        conn.call(&request(term)).await.expect("answer");
        pool.give_back(&addr, conn);
    }
    assert_eq!(seen.recv().await, Some(Protocol::RaftWire));
    assert!(seen.try_recv().is_err(), "one connection for every call");

    // A failed attempt sends calls to gRPC for a moment; a cancelled one
    // frees the slot at once.
    let Taken::Connect(slot) = pool.reconnect("down:7401") else {
        panic!("connect");
    };
    assert!(!slot.finish(Connected::Failed));
    assert!(matches!(pool.take("down:7401", 0), Taken::Grpc));
    let Taken::Connect(slot) = pool.take("gone:7401", 0) else {
        panic!("connect");
    };
    drop(slot);
    assert!(matches!(pool.take("gone:7401", 0), Taken::Connect(_)));
    // A peer of an earlier build is news once.
    let Taken::Connect(slot) = pool.take("old:7401", 0) else {
        panic!("connect");
    };
    assert!(slot.finish(Connected::Unsupported));
    assert!(matches!(pool.take("old:7401", 0), Taken::Grpc));
}

#[tokio::test]
async fn the_pool_closes_idle_connections_once_the_peer_name_resolves_elsewhere() {
    let (addr, _seen) = server(echo_term).await;
    let pool = WirePool::default();
    let Taken::Connect(slot) = pool.take(&addr, 0) else {
        panic!("nothing open yet: connect");
    };
    let conn = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    slot.finish(Connected::Yes);
    pool.give_back(&addr, conn);
    assert!(
        matches!(pool.take(&addr, 1), Taken::Connect(_)),
        "the idle connection was to where the name resolved before"
    );
    let old = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    pool.give_back(&addr, old);
    assert!(
        matches!(pool.take(&addr, 1), Taken::Connect(_)),
        "one opened at the old generation is not kept"
    );
}

#[tokio::test]
async fn a_refusal_is_answered_and_closes_the_connection() {
    let (addr, _seen) = server(echo_term).await;
    let mut conn = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    match conn.call(&request(99)).await {
        Err(CallError::Refused(Refusal::Unavailable(m))) => assert_eq!(m, "shutting down"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(conn.call(&request(1)).await, Err(CallError::Io(_))));
}

#[tokio::test]
async fn an_answer_leaves_when_the_job_holding_it_runs_on_another_thread() {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    let (held_tx, mut held_rx) = tokio::sync::mpsc::unbounded_channel::<Held>();
    tokio::spawn(async move {
        let (s, _) = l.accept().await.expect("accept");
        assert_eq!(sniff(&s).await, Protocol::RaftWire);
        let hold = move |job| {
            assert!(held_tx.send(job).is_ok(), "held");
            None
        };
        serve_tcp(s, MAX, hold, |req| async move { echo_term(req) }).await;
    });
    let conn = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    calls_answered_by_held_jobs(conn, &mut held_rx, 3).await;
}

/// Makes `calls` calls on `conn`, each answered only once the job the
/// server held it in runs on a thread outside the runtime (as the log's
/// sync thread does); gives the connection back.
async fn calls_answered_by_held_jobs(
    mut conn: WireConn,
    held_rx: &mut tokio::sync::mpsc::UnboundedReceiver<Held>,
    calls: u64,
) -> WireConn {
    for term in 1..=calls {
        let call = tokio::spawn(async move {
            let resp = conn.call(&request(term)).await;
            (conn, resp)
        });
        let job = held_rx.recv().await.expect("a job");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!call.is_finished(), "the answer is held until its job runs");
        std::thread::spawn(job).join().expect("job ran");
        let (c, resp) = call.await.expect("call");
        let Some(ipb::append_entries_response::Result::HigherVote(vote)) = resp.expect("answer").result else {
            panic!("no vote");
        };
        assert_eq!(term_of(Some(&vote)), Some(term));
        conn = c;
    }
    conn
}

#[tokio::test]
async fn an_http2_connection_goes_to_grpc() {
    let (addr, mut seen) = server(echo_term).await;
    let mut s = TcpStream::connect(&addr).await.expect("connect");
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.expect("write");
    assert_eq!(seen.recv().await, Some(Protocol::Other));
    // A magic sent in pieces is still the magic.
    let mut s = TcpStream::connect(&addr).await.expect("connect");
    s.write_all(&MAGIC[..3]).await.expect("write");
    tokio::time::sleep(Duration::from_millis(20)).await;
    s.write_all(&MAGIC[3..]).await.expect("write");
    assert_eq!(seen.recv().await, Some(Protocol::RaftWire));
}

/// Sends raw bytes after the handshake and returns what the server
/// answered before closing.
async fn raw(addr: &str, bytes: &[u8]) -> (u8, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(&MAGIC).await.expect("write");
    let mut echo = [0u8; 8];
    s.read_exact(&mut echo).await.expect("echo");
    s.write_all(bytes).await.expect("write");
    let mut r = BufReader::new(s);
    let (kind, body) = read_frame(&mut r, MAX).await.expect("frame").expect("an answer");
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).await.expect("closed");
    assert!(rest.is_empty());
    (kind, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn malformed_and_oversized_frames_are_refused_as_invalid() {
    let (addr, _seen) = server(echo_term).await;
    // A body that is not an AppendEntriesRequest.
    let (kind, msg) = raw(&addr, &[0, 0, 0, 4, KIND_OK, 0xff, 0xff, 0xff]).await;
    assert_eq!(kind, KIND_INVALID, "{msg}");
    assert!(msg.contains("malformed"), "{msg}");
    // A length over the limit, refused before any body is read.
    let (kind, msg) = raw(&addr, &(u32::MAX).to_be_bytes()).await;
    assert_eq!(kind, KIND_INVALID);
    assert!(msg.contains("over the limit"), "{msg}");
    // An empty frame, and an unknown kind.
    assert_eq!(raw(&addr, &[0, 0, 0, 0]).await.0, KIND_INVALID);
    assert_eq!(raw(&addr, &[0, 0, 0, 1, 7]).await.0, KIND_INVALID);
    // The server still takes new connections.
    let mut conn = WireConn::connect(&Names::default(), &addr, MAX, None)
        .await
        .expect("connect");
    assert!(conn.call(&request(3)).await.is_ok());
}

/// A server that writes `greeting` to each connection and then keeps it
/// open for a while (or closes it at once, if `close`).
async fn greeter(greeting: &'static [u8], close: bool) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.expect("accept");
        s.write_all(greeting).await.expect("write");
        if !close {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
    addr
}

#[tokio::test]
async fn a_peer_that_answers_the_magic_with_other_bytes_is_unsupported() {
    // What a node of an earlier build answers (its HTTP/1.1 server), and
    // an HTTP/2-only server's SETTINGS frame.
    for greeting in [
        &b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n"[..],
        &[0u8, 0, 0, 4, 0, 0, 0, 0, 0][..],
    ] {
        let addr = greeter(greeting, false).await;
        assert!(matches!(
            WireConn::connect(&Names::default(), &addr, MAX, None).await,
            Err(CallError::Unsupported)
        ));
    }
}

#[tokio::test]
async fn a_silent_closed_or_absent_peer_is_unreachable_not_unsupported() {
    // Silence (a paused node), a close during the handshake, nobody
    // listening: all tried again later over the wire.
    for (greeting, close) in [(&b""[..], false), (&b"HSR"[..], true)] {
        let addr = greeter(greeting, close).await;
        assert!(matches!(
            WireConn::connect(&Names::default(), &addr, MAX, None).await,
            Err(CallError::Io(_))
        ));
    }
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    drop(l);
    assert!(matches!(
        WireConn::connect(&Names::default(), &addr, MAX, None).await,
        Err(CallError::Io(_))
    ));
}

/// The wire inside mutual TLS, as on a peer port with peer TLS.
mod over_tls {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::tls::{self, TlsFiles};

    /// A CA and node 1's certificate (for localhost) in `dir`.
    fn files(dir: &Path) -> TlsFiles {
        crate::cli::certs::run(crate::cli::certs::CertsArgs {
            dir: dir.to_path_buf(),
            nodes: vec!["1=localhost".into()],
            clients: vec![],
            days: 1,
            force: false,
        })
        .expect("certificates");
        TlsFiles {
            cert: dir.join("node-1.pem"),
            key: dir.join("node-1-key.pem"),
            ca: Some(dir.join("ca.pem")),
        }
    }

    /// A TLS listener requiring client certificates of the CA, offering
    /// the wire by ALPN only if `wire`; its handshakes' chosen protocols go
    /// to the receiver, wire connections are served with `hold`.
    async fn server(
        files: TlsFiles,
        wire: bool,
        hold: impl Fn(Held) -> Option<Held> + Clone + Send + Sync + 'static,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<Option<Vec<u8>>>) {
        let tls = tls::server::load("test", files, None).expect("server TLS");
        let mut config = (*tls.current()).clone();
        if !wire {
            config.alpn_protocols = vec![b"h2".to_vec()];
        }
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = format!("localhost:{}", l.local_addr().expect("addr").port());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                let Ok(s) = acceptor.accept(s).await else {
                    let _ = tx.send(None);
                    continue;
                };
                let alpn = s.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                let _ = tx.send(alpn.clone());
                if alpn.as_deref() == Some(ALPN) {
                    let hold = hold.clone();
                    tokio::spawn(serve_stream(s, MAX, hold, |req| async move { echo_term(req) }));
                }
            }
        });
        (addr, rx)
    }

    fn client(files: &TlsFiles) -> Arc<rustls::ClientConfig> {
        let tls = tls::peer::load_client(files.clone()).expect("client TLS");
        tls::peer::wire_config(&tls)
    }

    #[tokio::test]
    async fn calls_cross_one_tls_connection_and_held_answers_leave_from_another_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = files(dir.path());
        let (held_tx, mut held_rx) = tokio::sync::mpsc::unbounded_channel::<Held>();
        let hold = move |job| {
            assert!(held_tx.send(job).is_ok(), "held");
            None
        };
        let (addr, mut seen) = server(files.clone(), true, hold).await;
        let conn = WireConn::connect(&Names::default(), &addr, MAX, Some(client(&files)))
            .await
            .expect("connect");
        assert_eq!(seen.recv().await, Some(Some(ALPN.to_vec())), "the wire, by ALPN");
        let mut conn = calls_answered_by_held_jobs(conn, &mut held_rx, 5).await;
        assert!(seen.try_recv().is_err(), "one connection for every call");
        // A refusal is answered inside TLS and ends the connection.
        let call = tokio::spawn(async move { conn.call(&request(99)).await });
        match call.await.expect("call") {
            Err(CallError::Refused(Refusal::Unavailable(m))) => assert_eq!(m, "shutting down"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_tls_peer_without_the_wire_is_unsupported_and_one_without_a_certificate_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = files(dir.path());
        let (addr, _seen) = server(files.clone(), false, Some).await;
        assert!(matches!(
            WireConn::connect(&Names::default(), &addr, MAX, Some(client(&files))).await,
            Err(CallError::Unsupported)
        ));
        // No client certificate: the peer port's mutual TLS refuses it.
        let (addr, mut seen) = server(files.clone(), true, Some).await;
        let ca = files.ca.as_deref().expect("ca");
        let mut anonymous = tls::client_config(ca, None, ALPN).expect("config");
        anonymous.alpn_protocols = vec![ALPN.to_vec()];
        let refused = WireConn::connect(&Names::default(), &addr, MAX, Some(Arc::new(anonymous))).await;
        assert!(matches!(refused, Err(CallError::Io(_))), "{:?}", refused.err());
        assert_eq!(seen.recv().await, Some(None), "the handshake failed");
    }
}
