//! `handlestore auth`, `user` and `role`: authentication and authorization
//! (etcdctl's `auth`, `user` and `role`). Tokens are printed once.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use handlestore_client::auth::{Access, NamespacePolicy, NamespaceUsage, Permission};

use super::{CliError, Conn};

#[derive(clap::Subcommand, Debug)]
pub enum AuthCmd {
    /// Turn auth on; creates the user root (printing its token) if missing.
    Enable {
        /// Keep root's new token in FILE (readable by its owner only)
        /// instead of printing it; or, if FILE holds a token already (made
        /// elsewhere: a Kubernetes Secret), make that one root's. Run
        /// again once auth is on, it checks that FILE holds root's token
        /// and changes nothing: a one-shot setup step can run on every
        /// start.
        #[arg(long, value_name = "FILE")]
        root_token_file: Option<std::path::PathBuf>,
    },
    /// Turn auth off: every call is allowed again.
    Disable,
    /// Whether auth is on, and who these credentials name.
    Status,
}

#[derive(clap::Subcommand, Debug)]
pub enum UserCmd {
    /// Add a user and print its token (shown only now).
    Add {
        name: String,
        /// Roles to grant (repeat the flag, or separate with commas).
        #[arg(long = "role", value_delimiter = ',')]
        roles: Vec<String>,
        /// No token: the user authenticates with a client certificate
        /// whose common name is its name.
        #[arg(long)]
        no_token: bool,
    },
    Remove {
        name: String,
    },
    List,
    /// Print a new token for the user; the old one stops working at once.
    TokenRotate {
        name: String,
    },
    GrantRole {
        name: String,
        role: String,
    },
    RevokeRole {
        name: String,
        role: String,
    },
}

/// One grant, as `role grant` and `role revoke` take it.
#[derive(clap::Args, Debug)]
pub struct GrantArgs {
    role: String,
    /// read, write, admin or keyring.
    #[arg(value_parser = parse_access)]
    access: Access,
    /// The namespace the grant is in ("*": every namespace). Default: the
    /// command's --namespace.
    #[arg(long = "in")]
    grant_namespace: Option<String>,
    /// Narrow the grant to one handle store.
    #[arg(long, conflicts_with = "prefix")]
    store: Option<String>,
    /// Narrow the grant to the state keys under a prefix.
    #[arg(long)]
    prefix: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum RoleCmd {
    Add {
        name: String,
    },
    Remove {
        name: String,
    },
    /// Grant a role access to a namespace (optionally one store or prefix).
    Grant(GrantArgs),
    Revoke(GrantArgs),
    /// The roles and their grants.
    List,
}

#[derive(clap::Subcommand, Debug)]
pub enum NamespaceCmd {
    /// Set a namespace's policy (replaces it whole; no flags clears it).
    Set {
        name: String,
        /// Most entries (handles and state keys); 0 = no limit.
        #[arg(long, default_value_t = 0)]
        max_entries: u64,
        /// Most bytes (keys and values); 0 = no limit.
        #[arg(long, default_value_t = 0)]
        max_bytes: u64,
        /// Handle stores whose handles only their minter (and admins) see.
        #[arg(long, value_delimiter = ',')]
        owner_bound: Vec<String>,
    },
    /// Every namespace with a policy or data: usage and policy.
    List {
        /// Print JSON instead (fields: docs/operations.md, "JSON output").
        #[arg(long)]
        json: bool,
    },
}

fn parse_access(s: &str) -> Result<Access, String> {
    match s {
        "read" => Ok(Access::Read),
        "write" => Ok(Access::Write),
        "admin" => Ok(Access::Admin),
        "keyring" => Ok(Access::Keyring),
        _ => Err(format!("{s:?}: read, write, admin or keyring")),
    }
}

fn access_name(a: i32) -> &'static str {
    match Access::try_from(a) {
        Ok(Access::Read) => "read",
        Ok(Access::Write) => "write",
        Ok(Access::Admin) => "admin",
        Ok(Access::Keyring) => "keyring",
        Err(_) => "?",
    }
}

pub async fn run_auth(conn: &Conn, cmd: AuthCmd) -> Result<(), CliError> {
    if let AuthCmd::Enable {
        root_token_file: Some(file),
    } = &cmd
    {
        // Its own clients: without a token, then with the kept one.
        enable_keeping(conn, file).await.map_err(|e| CliError::new(1, e))?;
        println!("auth enabled; root's token is in {}", file.display());
        return Ok(());
    }
    let client = conn.client()?;
    match cmd {
        AuthCmd::Enable { root_token_file: _ } => match client.auth_enable().await? {
            Some(token) => {
                println!("auth enabled; the user root was created. Its token (shown only now):");
                println!("{token}");
                println!("use it with --token or HANDLESTORE_TOKEN");
            }
            None => println!("auth enabled"),
        },
        AuthCmd::Disable => {
            client.auth_disable().await?;
            println!("auth disabled");
        }
        AuthCmd::Status => {
            let s = client.auth_status().await?;
            println!(
                "auth: {} (revision {})",
                if s.enabled { "enabled" } else { "disabled" },
                s.revision
            );
            if !s.user.is_empty() {
                println!("you are: {} (roles: {})", s.user, s.roles.join(", "));
            }
        }
    }
    Ok(())
}

/// Turns auth on if it is off, with root's token in `file`: the token
/// `file` holds, if it holds one (the cluster adopts it: a Secret made by
/// the Helm chart, which no node can write), else a new one the cluster
/// makes, written there. If auth is on already, `file` must hold root's
/// token. Answers with the token.
pub async fn enable_keeping(conn: &Conn, file: &Path) -> Result<String, String> {
    let anonymous = with_token(conn, None)?;
    let status = anonymous.auth_status().await.map_err(|e| e.to_string())?;
    let held = held_token(file)?;
    if !status.enabled {
        if let Some(token) = held {
            anonymous
                .auth_enable_with_root_token(&token)
                .await
                .map_err(|e| format!("enabling auth with the token in {} as root's: {e}", file.display()))?;
            return Ok(token);
        }
        if let Some(made) = anonymous
            .auth_enable()
            .await
            .map_err(|e| format!("enabling auth: {e}"))?
        {
            keep(file, &made).map_err(|e| format!("keeping root's token in {}: {e}", file.display()))?;
            return Ok(made);
        }
    }
    let not_root = || format!("auth is enabled, but {} does not hold root's token", file.display());
    let kept = handlestore_client::auth::read_token_file(file).map_err(|_| not_root())?;
    match with_token(conn, Some(kept.clone()))?.auth_status().await {
        Ok(s) if s.user == "root" => Ok(kept),
        Ok(_) | Err(handlestore_client::Error::Unauthenticated(_)) => Err(not_root()),
        Err(e) => Err(e.to_string()),
    }
}

/// The token `file` holds (its first line, trimmed, as
/// `--token-file` reads it); None if there is no such file or it holds
/// only blanks. Anything else is sent as it is, for the node to refuse
/// if it is not a token.
fn held_token(file: &Path) -> Result<Option<String>, String> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {}: {e}", file.display())),
    };
    let text = String::from_utf8_lossy(&bytes);
    if text.trim().is_empty() {
        return Ok(None);
    }
    match text.lines().next().map(str::trim) {
        Some(token) if !token.is_empty() => Ok(Some(token.to_string())),
        _ => Err(format!("{}: its first line holds no token", file.display())),
    }
}

/// A client of `conn`'s cluster sending `token` (or none).
fn with_token(conn: &Conn, token: Option<String>) -> Result<handlestore_client::Client, String> {
    let mut conn = conn.clone();
    conn.token = token;
    conn.token_file = None;
    conn.client().map_err(|e| e.message)
}

/// Writes the token readable by its owner only.
fn keep(file: &Path, token: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)?;
    writeln!(f, "{token}")?;
    f.sync_all()
}

pub async fn run_user(conn: &Conn, cmd: UserCmd) -> Result<(), CliError> {
    let client = conn.client()?;
    match cmd {
        UserCmd::Add { name, roles, no_token } => match client.user_add(&name, &roles, no_token).await? {
            Some(token) => println!("user {name} added; its token (shown only now):\n{token}"),
            None => println!("user {name} added (no token: it authenticates with a client certificate)"),
        },
        UserCmd::Remove { name } => {
            client.user_remove(&name).await?;
            println!("user {name} removed");
        }
        UserCmd::List => {
            for u in client.user_list().await? {
                let token = if u.has_token { "token" } else { "no token" };
                println!("{:<24} {:<9} roles: {}", u.name, token, u.roles.join(", "));
            }
        }
        UserCmd::TokenRotate { name } => {
            let token = client.user_token_rotate(&name).await?;
            println!("new token for {name} (shown only now; the old one no longer works):\n{token}");
        }
        UserCmd::GrantRole { name, role } => {
            client.user_grant_role(&name, &role).await?;
            println!("user {name} has role {role}");
        }
        UserCmd::RevokeRole { name, role } => {
            client.user_revoke_role(&name, &role).await?;
            println!("user {name} no longer has role {role}");
        }
    }
    Ok(())
}

fn permission(conn: &Conn, g: &GrantArgs) -> Permission {
    Permission {
        namespace: g.grant_namespace.clone().unwrap_or_else(|| conn.namespace.clone()),
        access: g.access as i32,
        store: g.store.clone().unwrap_or_default(),
        key_prefix: g.prefix.clone().unwrap_or_default(),
    }
}

fn describe(p: &Permission) -> String {
    let on = match (p.store.as_str(), p.key_prefix.as_str()) {
        ("", "") => String::new(),
        (s, "") => format!(" store {s}"),
        (_, k) => format!(" keys under {k:?}"),
    };
    format!("{} on namespace {}{on}", access_name(p.access), p.namespace)
}

pub async fn run_role(conn: &Conn, cmd: RoleCmd) -> Result<(), CliError> {
    let client = conn.client()?;
    match cmd {
        RoleCmd::Add { name } => {
            client.role_add(&name).await?;
            println!("role {name} added");
        }
        RoleCmd::Remove { name } => {
            client.role_remove(&name).await?;
            println!("role {name} removed");
        }
        RoleCmd::Grant(g) => {
            let p = permission(conn, &g);
            client.role_grant(&g.role, p.clone()).await?;
            println!("role {} may {}", g.role, describe(&p));
        }
        RoleCmd::Revoke(g) => {
            let p = permission(conn, &g);
            client.role_revoke(&g.role, p.clone()).await?;
            println!("role {} no longer may {}", g.role, describe(&p));
        }
        RoleCmd::List => {
            for r in client.role_list().await? {
                println!("{}", r.name);
                for p in &r.permissions {
                    println!("  {}", describe(p));
                }
            }
        }
    }
    Ok(())
}

pub async fn run_namespace(conn: &Conn, cmd: NamespaceCmd) -> Result<(), CliError> {
    let client = conn.client()?;
    match cmd {
        NamespaceCmd::Set {
            name,
            max_entries,
            max_bytes,
            owner_bound,
        } => {
            let policy = NamespacePolicy {
                name: name.clone(),
                max_entries,
                max_bytes,
                owner_bound_stores: owner_bound,
            };
            client.namespace_set(policy).await?;
            println!("namespace {name}: policy set");
        }
        NamespaceCmd::List { json: false } => print_usage(&client.namespace_list().await?),
        NamespaceCmd::List { json: true } => {
            super::json::print(&super::json::namespaces(&client.namespace_list().await?))
        }
    }
    Ok(())
}

/// One line per namespace: usage against its quota, and owner-bound stores.
pub fn print_usage(rows: &[NamespaceUsage]) {
    println!(
        "{:<24} {:>10} {:>12} {:>14} {:>12}  owner-bound",
        "namespace", "entries", "max entries", "bytes", "max bytes"
    );
    for u in rows {
        let p = u.policy.clone().unwrap_or_default();
        let limit = |n: u64| if n == 0 { "-".to_string() } else { n.to_string() };
        println!(
            "{:<24} {:>10} {:>12} {:>14} {:>12}  {}",
            u.name,
            u.entries,
            limit(p.max_entries),
            u.bytes,
            limit(p.max_bytes),
            p.owner_bound_stores.join(",")
        );
    }
}
