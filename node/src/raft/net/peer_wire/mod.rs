//! The Raft wire: AppendEntries between nodes as length-prefixed protobuf
//! frames on a TCP connection, on the node's port beside gRPC; inside
//! mutual TLS where the peer port has it.
//!
//! Every write, and every read round, crosses one of these calls per
//! follower, and over gRPC each was an HTTP/2 stream with its own headers,
//! flow control and task on both ends. Here a request is one write and its
//! answer one write, one at a time per connection, which is all openraft
//! needs: a replication stream sends one AppendEntries at a time. Measured
//! at one client: 29% less server CPU per mint and 22% less latency, 48%
//! and 36% for a linearizable get (docs/dev/performance-notes.md, "The Raft wire").
//!
//! A connection opens with [`MAGIC`] from the leader, echoed by the
//! follower; the node's listener peeks at the first bytes of every
//! connection and hands anything else (the HTTP/2 preface of gRPC) to the
//! gRPC server. A peer that answers with other bytes (a node of an earlier
//! version, whose HTTP/1.1 server refuses them as a bad request) is spoken
//! to over gRPC, as before, and asked again a minute later. The leader's
//! heartbeats, which confirm its leadership for linearizable reads, are
//! AppendEntries and so travel here too. Votes, snapshots, forwarded writes
//! and a follower's read-index requests to the leader stay on gRPC.
//!
//! With TLS, the leader asks for the wire by ALPN ([`ALPN`], alone) in the
//! handshake, and the listener hands the connection to the wire by the
//! protocol chosen; the magic is exchanged inside TLS as in the clear. A
//! peer whose TLS does not offer it (an earlier build) refuses the
//! handshake: it is spoken to over gRPC, as one in the clear that does not
//! echo the magic.
//!
//! Frames: a 4-byte big-endian length, then that many bytes: a kind byte
//! and a body. The leader's frames carry a `ipb::AppendEntriesRequest`; the
//! follower answers with kind [`KIND_OK`] and a `ipb::AppendEntriesResponse`,
//! or with [`KIND_INVALID`] / [`KIND_UNAVAILABLE`] and a message, and then
//! closes the connection.
//!
//! Files: `codec` (frames), `server` (a follower's side), `writer` (its
//! answers' way out), `conn` (a leader's connection), `pool` (a leader's
//! connections by peer).

pub(crate) mod codec;
mod conn;
mod pool;
mod server;
mod writer;

use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

pub use conn::WireConn;
pub use pool::{ConnectSlot, Connected, Taken, WirePool};
pub use server::{serve_stream, serve_tcp};

/// The ALPN protocol id a leader offers, alone, to speak the wire inside
/// TLS (kept with the TLS configurations that offer it).
pub use crate::tls::RAFT_WIRE_ALPN as ALPN;
/// The first bytes of a Raft wire connection, and the follower's echo.
/// HTTP/2's preface starts with "PRI", so the first byte tells them apart.
pub const MAGIC: [u8; 8] = *b"HSRAFT/1";
/// Kind byte: an answer (`ipb::AppendEntriesResponse`).
pub const KIND_OK: u8 = 0;
/// Kind byte: the request was malformed; the connection closes.
pub const KIND_INVALID: u8 = 1;
/// Kind byte: the node cannot take requests (shutting down); the connection
/// closes.
pub const KIND_UNAVAILABLE: u8 = 2;
/// How long a leader waits for a peer to answer [`MAGIC`] before it takes
/// the peer for one that cannot be reached now.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a leader waits for a connection to a peer (as for its gRPC
/// channels).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the listener waits for a new connection's first bytes before it
/// hands the connection to the gRPC server anyway.
pub const SNIFF_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a follower refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Invalid(String),
    Unavailable(String),
}

/// What a call over the wire ended with, short of an answer.
#[derive(Debug)]
pub enum CallError {
    /// The peer does not speak the Raft wire: use gRPC.
    Unsupported,
    /// Connecting, reading or writing failed.
    Io(io::Error),
    /// The follower refused the request.
    Refused(Refusal),
    /// The follower's answer could not be read.
    Malformed(String),
}

impl From<io::Error> for CallError {
    fn from(e: io::Error) -> Self {
        CallError::Io(e)
    }
}

/// What a new connection on the node's port speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    RaftWire,
    /// Anything else: gRPC, or bytes the gRPC server will refuse.
    Other,
}

/// Looks at a new connection's first bytes without taking them. Waits only
/// as long as they could still turn out to be [`MAGIC`].
pub async fn sniff(stream: &TcpStream) -> Protocol {
    let mut buf = [0u8; MAGIC.len()];
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return Protocol::Other,
            Ok(n) => n,
        };
        if buf[..n] != MAGIC[..n] {
            return Protocol::Other;
        }
        if n == MAGIC.len() {
            return Protocol::RaftWire;
        }
        // A prefix of MAGIC so far: peek returns at once while those bytes
        // sit unread, so wait a moment for the rest.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[cfg(test)]
mod tests;
