//! `handlestore health`: asks one node's `/healthz` (or `/readyz`) over
//! plain HTTP, or HTTPS with `--cacert` for a node with TLS; exit 0 when it
//! answers 200. Made for container healthchecks, where there is no curl.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::CliError;
use crate::tls;

#[derive(clap::Args, Debug)]
pub struct HealthArgs {
    /// The node's address (its client port); with no scheme, https when
    /// --cacert is given, else http.
    #[arg(long, default_value = "127.0.0.1:7401")]
    pub url: String,
    /// Ask `/readyz` (leader known, applied up to commit) instead of `/healthz`.
    #[arg(long)]
    pub ready: bool,
    /// How long to wait for the answer.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// The CA of the node's certificate (PEM): ask over HTTPS.
    #[arg(long, env = "HANDLESTORE_CACERT")]
    pub cacert: Option<PathBuf>,
    /// A client certificate (PEM), for a node that requires one.
    #[arg(long, env = "HANDLESTORE_CERT", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, env = "HANDLESTORE_KEY", requires = "cert")]
    pub key: Option<PathBuf>,
}

pub async fn run(args: HealthArgs) -> Result<(), CliError> {
    let scheme = if args.cacert.is_some() { "https" } else { "http" };
    let base = if args.url.contains("://") {
        args.url.trim_end_matches('/').to_string()
    } else {
        format!("{scheme}://{}", args.url.trim_end_matches('/'))
    };
    let url = format!("{base}/{}", if args.ready { "readyz" } else { "healthz" });
    if url.starts_with("https://") {
        let (status, body) = tokio::time::timeout(args.timeout, get_over_tls(&url, &args))
            .await
            .map_err(|_| CliError::new(1, format!("{url}: no answer within {:?}", args.timeout)))??;
        return answer(&url, status, &body);
    }
    let client = reqwest::Client::builder()
        .timeout(args.timeout)
        .build()
        .map_err(|e| CliError::new(2, e.to_string()))?;
    let resp = client
        .get(&url)
        .send()
        .await
        .map_err(|e| CliError::new(1, format!("{url}: {e}")))?;
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    answer(&url, status, &body)
}

fn answer(url: &str, status: u16, body: &str) -> Result<(), CliError> {
    if status == 200 {
        print!("{body}");
        Ok(())
    } else {
        Err(CliError::new(1, format!("{url}: {status}: {}", body.trim_end())))
    }
}

/// GET `url` over HTTPS, HTTP/1.1 (the node offers it by ALPN beside
/// HTTP/2): the status code and the body.
async fn get_over_tls(url: &str, args: &HealthArgs) -> Result<(u16, String), CliError> {
    let fail = |e: &dyn std::fmt::Display| CliError::new(1, format!("{url}: {e}"));
    let ca = args
        .cacert
        .as_deref()
        .ok_or_else(|| CliError::new(2, format!("{url}: https needs --cacert")))?;
    let config = tls::client_config(ca, args.cert.as_deref().zip(args.key.as_deref()), b"http/1.1")
        .map_err(|e| CliError::new(2, format!("{e:#}")))?;
    let uri: http::Uri = url.parse().map_err(|e| CliError::new(2, format!("{url}: {e}")))?;
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(443);
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| fail(&e))?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| fail(&e))?;
    let mut stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| fail(&e))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
        uri.path()
    );
    stream.write_all(request.as_bytes()).await.map_err(|e| fail(&e))?;
    let mut raw = Vec::new();
    // A peer that closes without close_notify still sent its answer.
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| fail(&"no HTTP answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| fail(&"no HTTP status"))?;
    let chunked = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        dechunk(body).ok_or_else(|| fail(&"a malformed chunked body"))?
    } else {
        body.to_string()
    };
    Ok((status, body))
}

/// The body of a chunked HTTP/1.1 answer (`SIZE\r\nDATA\r\n` ... `0`).
fn dechunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_chunked_body() {
        assert_eq!(
            super::dechunk("3\r\nok \r\n5;x=1\r\nready\r\n0\r\n\r\n").as_deref(),
            Some("ok ready")
        );
        assert_eq!(super::dechunk("0\r\n\r\n").as_deref(), Some(""));
        for bad in ["", "zz\r\nab\r\n0\r\n", "9\r\nshort\r\n0\r\n"] {
            assert_eq!(super::dechunk(bad), None, "{bad:?}");
        }
    }
}
