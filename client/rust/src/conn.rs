//! Client connections for the gRPC channels, as [`Conn`]s (see
//! `handlestore_proto::conn` for why).

use std::io;

use http::uri::Authority;
use tokio::net::TcpStream;

pub use handlestore_proto::conn::{ClientConn, Conn};

use crate::tls::ClientTls;

/// Connects to an endpoint's `host:port`, in the clear or, with `tls`,
/// through a TLS handshake that checks the node's certificate.
pub(crate) async fn dial(authority: &Authority, tls: Option<&ClientTls>) -> io::Result<ClientConn> {
    let conn = connect_tcp(authority).await?;
    let Some(tls) = tls else {
        return Ok(ClientConn::Plain(conn));
    };
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    let stream = tls.connector().connect(crate::tls::server_name(host)?, conn).await?;
    Ok(ClientConn::Tls(Box::new(stream)))
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
        for uri in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
            let authority: Authority = uri.parse().expect("authority");
            let io = match dial(&authority, None).await {
                Ok(io) => io,
                // "localhost" may resolve to ::1 first where nothing listens;
                // only the name lookup itself is under test there.
                Err(e) if uri.contains("localhost") && e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => panic!("{uri}: {e}"),
            };
            let ClientConn::Plain(conn) = io else {
                panic!("{uri}: a connection in the clear")
            };
            assert!(conn.tcp().nodelay().expect("nodelay"), "{uri}: TCP_NODELAY set");
            // h2 picks its chaining threshold from this: false makes it
            // gather frames under 1 KiB into one write.
            assert!(!tokio::io::AsyncWrite::is_write_vectored(&conn));
            listener.accept().await.expect("accept");
        }
    }

    #[tokio::test]
    async fn nothing_listening_is_an_error() {
        let free = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let authority: Authority = format!("127.0.0.1:{free}").parse().expect("authority");
        let err = dial(&authority, None).await.err().expect("nothing listens");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
