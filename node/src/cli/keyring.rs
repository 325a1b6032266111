//! `handlestore keyring`: the replicated key ring that signs and encrypts
//! MCP request state.

use super::{CliError, Conn};

#[derive(clap::Subcommand, Debug)]
pub enum KeyringCmd {
    /// Create the namespace's ring with its first key (fails if it exists).
    Create,
    /// Add a new primary key; the old one keeps verifying until retired.
    Rotate,
    /// Retire a key: what it signed no longer verifies.
    Retire { key_id: String },
    /// List the keys (never their secrets).
    List,
}

pub async fn run(conn: &Conn, cmd: KeyringCmd) -> Result<(), CliError> {
    let client = conn.client()?;
    match cmd {
        KeyringCmd::Create => println!("created key {}", client.keyring_rotate(true).await?),
        KeyringCmd::Rotate => println!("new primary key {}", client.keyring_rotate(false).await?),
        KeyringCmd::Retire { key_id } => {
            client.keyring_retire(&key_id).await?;
            println!("retired key {key_id}");
        }
        KeyringCmd::List => {
            let keys = client.keyring(false).await?;
            if keys.is_empty() {
                return Err(CliError::new(
                    1,
                    format!("namespace {} has no key ring", client.namespace()),
                ));
            }
            for k in keys {
                println!(
                    "{:<12} {:<8} created {}",
                    k.id,
                    if k.primary { "primary" } else { "active" },
                    k.created_ms
                );
            }
        }
    }
    Ok(())
}
