//! The secured dev cluster's one setup step, done for the user: once the
//! nodes answer, turn auth on (the first time) and keep root's token in
//! `DATA/root.token`; then say how to connect.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use handlestore_client::{Client, ClientTls};

use super::{DEFAULT_DATA, ROOT_TOKEN_FILE};

/// Longest the nodes may take to elect a leader and enable auth.
const READY_WITHIN: Duration = Duration::from_secs(60);

pub async fn announce(data: &Path, certs: &Path, endpoints: &[String]) -> Result<(), String> {
    let ca = certs.join("ca.pem");
    let token_file = data.join(ROOT_TOKEN_FILE);
    let kept = std::fs::read_to_string(&token_file).ok().map(|t| t.trim().to_string());
    let token = root_token(&ca, endpoints, kept, &token_file).await?;
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    println!("  export HANDLESTORE_ENDPOINTS={}", endpoints.join(","));
    println!("  export HANDLESTORE_CACERT={}", abs(&ca).display());
    println!("  export HANDLESTORE_TOKEN=$(cat {})", abs(&token_file).display());
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

/// Root's token: auth is enabled now if it is off (keeping the new token),
/// else the kept one.
async fn root_token(ca: &Path, endpoints: &[String], kept: Option<String>, file: &Path) -> Result<String, String> {
    let tls = ClientTls::from_files(ca, None, None).map_err(|e| e.to_string())?;
    let mut builder = Client::builder(endpoints.to_vec()).tls(tls).deadline(READY_WITHIN);
    if let Some(t) = &kept {
        builder = builder.token(t.clone());
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    let status = client
        .auth_status()
        .await
        .map_err(|e| format!("the dev cluster: {e}"))?;
    if !status.enabled
        && let Some(made) = client.auth_enable().await.map_err(|e| format!("enabling auth: {e}"))?
    {
        keep(file, &made).map_err(|e| format!("keeping root's token in {}: {e}", file.display()))?;
        return Ok(made);
    }
    kept.ok_or_else(|| {
        format!(
            "auth is enabled, but root's token is not in {} (remove the dev data to start afresh)",
            file.display()
        )
    })
}

/// Writes the token readable by its owner only.
fn keep(file: &Path, token: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)?;
    writeln!(f, "{token}")
}
