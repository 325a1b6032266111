//! TCP connections for the gRPC channels, on both ends.
//!
//! HTTP/2 (the `h2` crate) writes a DATA frame's payload of 256 bytes or
//! more as a slice of its own when the socket takes vectored writes, and
//! cannot add another frame behind it until that payload is on the wire:
//! every message carrying a value of a few hundred bytes went out in a
//! `writev` of its own, however many were ready. On a connection that
//! reports no vectored writes, `h2` copies payloads under 1 KiB into its
//! write buffer instead, so messages that are ready together leave in one
//! system call (measured in docs/dev/performance-notes.md, "Fewer socket
//! writes").
//! Larger payloads take two `write` calls instead of one `writev`.
//!
//! The node's server accepts its connections as [`Conn`], and the client
//! connects through it too.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::uri::Authority;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::Uri;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// A TCP connection that reports no vectored writes, with Nagle's
/// algorithm off (a reply's last frame must not wait for the peer's ACK).
pub struct Conn(TcpStream);

impl Conn {
    /// Wraps a connected stream and sets `TCP_NODELAY` on it.
    pub fn new(tcp: TcpStream) -> Self {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        Conn(tcp)
    }
}

impl AsyncRead for Conn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        false
    }
}

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.0.connect_info()
    }
}

/// Connects a channel to `http://host:port` as a [`Conn`]. The endpoint's
/// connect timeout still applies (tonic wraps any connector in it).
pub(crate) async fn connect(uri: Uri) -> io::Result<TokioIo<Conn>> {
    let authority = uri
        .authority()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("no host in {uri}")))?;
    Ok(TokioIo::new(connect_tcp(authority).await?))
}

/// Connects to an endpoint's `host:port` (port 80 if none) as a [`Conn`].
pub(crate) async fn connect_tcp(authority: &Authority) -> io::Result<Conn> {
    // An IPv6 literal comes bracketed in a URI.
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(80);
    Ok(Conn::new(TcpStream::connect((host, port)).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connects_by_address_and_by_name_with_nodelay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        for uri in [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")] {
            let io = match connect(uri.parse().expect("uri")).await {
                Ok(io) => io,
                // "localhost" may resolve to ::1 first where nothing listens;
                // only the name lookup itself is under test there.
                Err(e) if uri.contains("localhost") && e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => panic!("{uri}: {e}"),
            };
            let conn = io.into_inner();
            assert!(conn.0.nodelay().expect("nodelay"), "{uri}: TCP_NODELAY set");
            // h2 picks its chaining threshold from this: false makes it
            // gather frames under 1 KiB into one write.
            assert!(!conn.is_write_vectored());
            listener.accept().await.expect("accept");
        }
    }

    #[tokio::test]
    async fn a_uri_without_a_host_or_with_nothing_listening_is_an_error() {
        let free = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let err = connect(format!("http://127.0.0.1:{free}").parse().expect("uri"))
            .await
            .err()
            .expect("nothing listens");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        let err = connect("/no/host".parse().expect("uri")).await.err().expect("no host");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
