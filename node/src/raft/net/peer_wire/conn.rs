//! A leader's connection to one follower: one request, one answer; on a
//! plain socket or inside mutual TLS.

use std::io;
use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::codec::{frame, read_all_or_eof, read_frame};
use super::*;
use crate::raft::net::names::Names;

type ReadSide = BufReader<Box<dyn AsyncRead + Send + Unpin>>;
type WriteSide = Box<dyn AsyncWrite + Send + Unpin>;

/// A leader's connection to one follower.
pub struct WireConn {
    r: ReadSide,
    w: WriteSide,
    max_message: usize,
    /// The generation of the answer its peer's name resolved to.
    generation: u64,
}

impl WireConn {
    /// Connects to `addr` ("host:port", the peer's port, resolved now by
    /// `names`) and checks that it speaks the Raft wire. With `tls` (a client configuration offering
    /// only [`ALPN`]), inside TLS; a peer whose TLS does not offer the wire
    /// is [`CallError::Unsupported`].
    pub async fn connect(
        names: &Names,
        addr: &str,
        max_message: usize,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Self, CallError> {
        let (stream, generation) = match tokio::time::timeout(CONNECT_TIMEOUT, names.connect(addr)).await {
            Ok(connected) => connected?,
            Err(_) => {
                return Err(CallError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no connection within {CONNECT_TIMEOUT:?}"),
                )));
            }
        };
        let (mut r, mut w) = match tls {
            None => {
                let (r, w) = stream.into_split();
                (
                    BufReader::new(Box::new(r) as Box<dyn AsyncRead + Send + Unpin>),
                    Box::new(w) as WriteSide,
                )
            }
            Some(config) => {
                let handshake = tls_handshake(addr, stream, config);
                let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                    Ok(shaken) => shaken?,
                    Err(_) => {
                        return Err(CallError::Io(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("no TLS handshake within {HANDSHAKE_TIMEOUT:?}"),
                        )));
                    }
                };
                let (r, w) = tokio::io::split(stream);
                (
                    BufReader::new(Box::new(r) as Box<dyn AsyncRead + Send + Unpin>),
                    Box::new(w) as WriteSide,
                )
            }
        };
        w.write_all(&MAGIC).await?;
        w.flush().await?;
        let mut echo = [0u8; MAGIC.len()];
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_all_or_eof(&mut r, &mut echo)).await {
            Ok(Ok(true)) if echo == MAGIC => Ok(Self {
                r,
                w,
                max_message,
                generation,
            }),
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

    /// The generation of the answer its peer's name resolved to (see
    /// `names`): the pool keeps it only while that is the name's current.
    pub fn generation(&self) -> u64 {
        self.generation
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
        self.w.flush().await?;
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

/// The TLS handshake with the peer at `addr`, which must choose the Raft
/// wire by ALPN: a peer that does not know it (a node of an earlier build)
/// is [`CallError::Unsupported`].
async fn tls_handshake(
    addr: &str,
    tcp: TcpStream,
    config: Arc<rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, CallError> {
    let invalid = |m: String| CallError::Io(io::Error::new(io::ErrorKind::InvalidInput, m));
    let host = addr
        .rsplit_once(':')
        .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']'))
        .ok_or_else(|| invalid(format!("no port in {addr}")))?;
    let name = ServerName::try_from(host.to_string()).map_err(|e| invalid(format!("{host}: {e}")))?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| {
            let no_alpn = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
                == Some(&rustls::Error::AlertReceived(
                    rustls::AlertDescription::NoApplicationProtocol,
                ));
            if no_alpn {
                CallError::Unsupported
            } else {
                CallError::Io(e)
            }
        })?;
    if stream.get_ref().1.alpn_protocol() != Some(ALPN) {
        return Err(CallError::Unsupported);
    }
    Ok(stream)
}
