//! A leader's connection to one follower: one request, one answer.

use std::io;

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use super::codec::{frame, read_all_or_eof, read_frame};
use super::*;

/// A leader's connection to one follower.
pub struct WireConn {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    max_message: usize,
}

impl WireConn {
    /// Connects to `addr` ("host:port", the peer's one port) and checks that
    /// it speaks the Raft wire.
    pub async fn connect(addr: &str, max_message: usize) -> Result<Self, CallError> {
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(connected) => connected?,
            Err(_) => {
                return Err(CallError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no connection within {CONNECT_TIMEOUT:?}"),
                )));
            }
        };
        stream.set_nodelay(true)?;
        let (r, mut w) = stream.into_split();
        let mut r = BufReader::new(r);
        w.write_all(&MAGIC).await?;
        let mut echo = [0u8; MAGIC.len()];
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_all_or_eof(&mut r, &mut echo)).await {
            Ok(Ok(true)) if echo == MAGIC => Ok(Self { r, w, max_message }),
            // Other bytes: a node of an earlier build, whose HTTP/1.1 server
            // answers "HTTP/1.1 400 Bad Request" at once ('/' cannot be in
            // a method name), or an HTTP/2-only server's SETTINGS frame.
            Ok(Ok(true)) => Err(CallError::Unsupported),
            // A close, or silence (a paused or overloaded node): try again
            // later, as for any peer that cannot be reached.
            Ok(Ok(false)) => Err(CallError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the connection during the handshake",
            ))),
            Err(_) => Err(CallError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no handshake within {HANDSHAKE_TIMEOUT:?}"),
            ))),
            Ok(Err(e)) => Err(CallError::Io(e)),
        }
    }

    /// Sends one AppendEntries and waits for its answer.
    pub async fn call(&mut self, req: &ipb::AppendEntriesRequest) -> Result<ipb::AppendEntriesResponse, CallError> {
        let body = req.encode_to_vec();
        if body.len() > self.max_message {
            return Err(CallError::Malformed(format!(
                "an AppendEntries of {} bytes is over the limit of {}",
                body.len(),
                self.max_message
            )));
        }
        self.w.write_all(&frame(KIND_OK, &body)?).await?;
        let (kind, body) = match read_frame(&mut self.r, self.max_message).await? {
            Some(frame) => frame,
            None => {
                return Err(CallError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                )));
            }
        };
        let text = || String::from_utf8_lossy(&body).into_owned();
        match kind {
            KIND_OK => ipb::AppendEntriesResponse::decode(body.as_slice())
                .map_err(|e| CallError::Malformed(format!("malformed AppendEntries answer: {e}"))),
            KIND_INVALID => Err(CallError::Refused(Refusal::Invalid(text()))),
            KIND_UNAVAILABLE => Err(CallError::Refused(Refusal::Unavailable(text()))),
            other => Err(CallError::Malformed(format!("unknown answer kind {other}"))),
        }
    }
}
