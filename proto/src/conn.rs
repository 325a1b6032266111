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
//! connects through it too (`handlestore_client::conn`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
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

    /// The TCP stream inside.
    pub fn tcp(&self) -> &TcpStream {
        &self.0
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

/// Forwards the byte-stream traits of an enum of a clear [`Conn`] and a
/// TLS stream over one, reporting no vectored writes (see above).
macro_rules! either_stream {
    ($name:ident) => {
        impl AsyncRead for $name {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $name::Plain(c) => Pin::new(c).poll_read(cx, buf),
                    $name::Tls(t) => Pin::new(t.as_mut()).poll_read(cx, buf),
                }
            }
        }

        impl AsyncWrite for $name {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    $name::Plain(c) => Pin::new(c).poll_write(cx, buf),
                    $name::Tls(t) => Pin::new(t.as_mut()).poll_write(cx, buf),
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $name::Plain(c) => Pin::new(c).poll_flush(cx),
                    $name::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
                }
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    $name::Plain(c) => Pin::new(c).poll_shutdown(cx),
                    $name::Tls(t) => Pin::new(t.as_mut()).poll_shutdown(cx),
                }
            }

            fn is_write_vectored(&self) -> bool {
                false
            }
        }
    };
}

/// A connection a node accepted: in the clear, or TLS over TCP.
pub enum ServerConn {
    Plain(Conn),
    Tls(Box<tokio_rustls::server::TlsStream<Conn>>),
}

either_stream!(ServerConn);

/// Who is at the other end of a [`ServerConn`]: its address, and the
/// certificate it showed (TLS with client certificates only).
#[derive(Debug, Clone)]
pub struct PeerInfo {
    pub remote_addr: Option<std::net::SocketAddr>,
    /// The client's end-entity certificate (DER), verified against the
    /// node's client CA; shared, as every request of the connection
    /// carries a clone of this.
    pub client_cert: Option<std::sync::Arc<rustls::pki_types::CertificateDer<'static>>>,
}

impl Connected for ServerConn {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        match self {
            ServerConn::Plain(c) => PeerInfo {
                remote_addr: c.tcp().peer_addr().ok(),
                client_cert: None,
            },
            ServerConn::Tls(t) => {
                let (conn, session) = t.get_ref();
                PeerInfo {
                    remote_addr: conn.tcp().peer_addr().ok(),
                    client_cert: session
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| std::sync::Arc::new(c.clone().into_owned())),
                }
            }
        }
    }
}

/// A connection a client made: in the clear, or TLS over TCP.
pub enum ClientConn {
    Plain(Conn),
    Tls(Box<tokio_rustls::client::TlsStream<Conn>>),
}

either_stream!(ClientConn);
