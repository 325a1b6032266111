//! The secured dev cluster's one setup step, done for the user: once the
//! nodes answer, turn auth on (the first time) and keep root's token in
//! `DATA/root.token`; then say how to connect.

use std::path::Path;
use std::time::Duration;

use super::{DEFAULT_DATA, ROOT_TOKEN_FILE};
use crate::cli::Conn;
use crate::cli::auth::enable_keeping;

/// Longest the nodes may take to elect a leader and enable auth.
const READY_WITHIN: Duration = Duration::from_secs(60);

pub async fn announce(data: &Path, certs: &Path, endpoints: &[String]) -> Result<(), String> {
    let ca = certs.join("ca.pem");
    let token_file = data.join(ROOT_TOKEN_FILE);
    let conn = Conn {
        endpoints: endpoints.to_vec(),
        namespace: "default".into(),
        timeout: READY_WITHIN,
        cacert: Some(ca.clone()),
        cert: None,
        key: None,
        token: None,
        token_file: None,
    };
    let token = enable_keeping(&conn, &token_file)
        .await
        .map_err(|e| format!("the dev cluster: {e} (remove the dev data to start afresh)"))?;
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    println!("  export HANDLESTORE_ENDPOINTS={}", endpoints.join(","));
    println!("  export HANDLESTORE_CACERT={}", abs(&ca).display());
    println!("  export HANDLESTORE_TOKEN_FILE={}", abs(&token_file).display());
    println!(
        "TLS and auth are on: root's token ({} characters) is in {}.",
        token.len(),
        token_file.display()
    );
    if data == Path::new(DEFAULT_DATA) {
        println!("`handlestore` commands run in this directory use the CA and that token by themselves.");
    }
    Ok(())
}
