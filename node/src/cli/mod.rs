//! The `handlestore` command line: `node` and `dev` run servers; the other
//! subcommands are an etcdctl-like admin client. The top layer: it may
//! use every other (it runs `server` for `node` and `dev`); none uses it.
//! Its arguments' doc comments are `--help` text, read in a terminal,
//! where `<prefix>` is a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod auth;
pub(crate) mod certs;
mod dev;
mod handle;
mod handle_admin;
mod health;
mod join;
mod json;
mod keyring;
mod kv;
mod leader;
mod mcp;
mod member;
mod node;
mod shrink;
mod snapshot;
mod status;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// The dev cluster's client endpoints: the default for every admin command
/// (https once a CA is given or found, else http).
pub const DEFAULT_ENDPOINTS: &str = "127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403";

/// `handlestore --version`: the release and the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("HANDLESTORE_COMMIT"), ")");

#[derive(Parser, Debug)]
#[command(
    name = "handlestore",
    version = VERSION,
    about = "Raft-replicated store for the state of stateless MCP servers"
)]
pub struct Cli {
    /// How log lines are written to stderr: text, or one JSON object per
    /// line (`timestamp`, `level`, `message`, fields, `span`).
    #[arg(long, global = true, value_enum, default_value_t, env = "HANDLESTORE_LOG_FORMAT")]
    log_format: crate::observe::logs::LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// Where admin commands connect.
#[derive(clap::Args, Debug, Clone)]
pub struct Conn {
    /// Comma-separated client endpoints of the cluster.
    #[arg(long, env = "HANDLESTORE_ENDPOINTS", default_value = DEFAULT_ENDPOINTS, value_delimiter = ',', global = true)]
    pub endpoints: Vec<String>,
    /// Namespace (tenant).
    #[arg(long, env = "HANDLESTORE_NAMESPACE", default_value = "default", global = true)]
    pub namespace: String,
    /// Overall deadline of one command, retries included.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration, global = true)]
    pub timeout: Duration,
    /// The CA that signed the nodes' certificates (PEM): talk TLS to them.
    #[arg(long, env = "HANDLESTORE_CACERT", global = true)]
    pub cacert: Option<PathBuf>,
    /// A client certificate (PEM), for nodes that require one.
    #[arg(
        long = "cert",
        id = "client_cert",
        env = "HANDLESTORE_CERT",
        global = true,
        requires = "client_key"
    )]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(
        long = "key",
        id = "client_key",
        env = "HANDLESTORE_KEY",
        global = true,
        requires = "client_cert"
    )]
    pub key: Option<PathBuf>,
    /// A user's token (`handlestore user add` printed it), for clusters
    /// with auth enabled.
    #[arg(long, env = "HANDLESTORE_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// A file holding the token (a container secret), instead of --token.
    #[arg(long, env = "HANDLESTORE_TOKEN_FILE", global = true, conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
}

impl Conn {
    pub fn client(&self) -> Result<handlestore_client::Client, CliError> {
        self.client_for(self.endpoints.iter().map(|e| e.trim().to_string()))
    }

    /// A client of these endpoints, with this command's credentials.
    pub fn client_for(
        &self,
        endpoints: impl IntoIterator<Item = String>,
    ) -> Result<handlestore_client::Client, CliError> {
        let mut builder = handlestore_client::Client::builder(endpoints)
            .namespace(self.namespace.clone())
            .deadline(self.timeout);
        let dev = self.dev_cluster();
        let ca = self.cacert.clone().or_else(|| dev.as_ref().map(DevCluster::ca));
        let (cert, key) = (self.cert.as_deref(), self.key.as_deref());
        if let Some(tls) = handlestore_client::ClientTls::from_optional_files(ca.as_deref(), cert, key)? {
            builder = builder.tls(tls);
        }
        // A client certificate names its user: root's token would override it.
        let dev_token = dev.filter(|_| cert.is_none()).and_then(|d| d.root_token());
        if let Some(token) = self.given_token()?.or(dev_token) {
            builder = builder.token(token);
        }
        builder.build().map_err(CliError::from)
    }

    /// Calls `f` on each endpoint in turn until one answers, all within
    /// `--timeout`: each endpoint gets an equal share of what is left, so
    /// a frozen node (which takes the connection and never answers) costs
    /// its share and no more. A node that is down or cannot serve the call
    /// now (UNAVAILABLE, a deadline, a broken connection) passes it to the
    /// next; any other answer is final.
    pub async fn first_answer<T, F, Fut>(&self, f: F) -> Result<T, CliError>
    where
        F: Fn(handlestore_client::NodeChannel) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let client = self.client()?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        let endpoints = client.endpoints();
        let mut last = String::from("no endpoints");
        for (i, endpoint) in endpoints.iter().enumerate() {
            let Some(ch) = client.channel(i) else { continue };
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let share = left / u32::try_from(endpoints.len() - i).unwrap_or(u32::MAX);
            match tokio::time::timeout(share, f(ch)).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(s)) if another_node_may_answer(s.code()) => last = format!("{endpoint}: {}", s.message()),
                Ok(Err(s)) => return Err(CliError::new(2, s.message().to_string())),
                Err(_) => last = format!("{endpoint}: no answer within {share:?}"),
            }
        }
        Err(CliError::new(
            2,
            format!("no node answered within {:?}: {last}", self.timeout),
        ))
    }

    /// The token of --token or --token-file.
    fn given_token(&self) -> Result<Option<String>, CliError> {
        let Some(file) = &self.token_file else {
            return Ok(self.token.clone());
        };
        handlestore_client::auth::read_token_file(file)
            .map(Some)
            .map_err(|e| CliError::new(2, format!("--token-file {}: {e}", file.display())))
    }

    /// A secured dev cluster whose data is in `./.handlestore-dev`, for a
    /// command aimed at the dev cluster's endpoints: its CA and root's
    /// token stand in for the credentials the command was not given.
    fn dev_cluster(&self) -> Option<DevCluster> {
        if self.endpoints.join(",") != DEFAULT_ENDPOINTS {
            return None;
        }
        let data = PathBuf::from(dev::DEFAULT_DATA);
        data.join(dev::CERTS_DIR)
            .join("ca.pem")
            .exists()
            .then_some(DevCluster(data))
    }
}

/// The data directory of a secured dev cluster.
struct DevCluster(PathBuf);

impl DevCluster {
    fn ca(&self) -> PathBuf {
        self.0.join(dev::CERTS_DIR).join("ca.pem")
    }

    fn root_token(&self) -> Option<String> {
        let t = std::fs::read_to_string(self.0.join(dev::ROOT_TOKEN_FILE)).ok()?;
        Some(t.trim().to_string())
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one node.
    Node(Box<node::NodeArgs>),
    /// Run a three-node cluster on loopback (development).
    Dev(dev::DevArgs),
    /// Create a CA, and node and client certificates signed by it.
    Certs(certs::CertsArgs),
    /// Show the cluster: leader, term, members, and per node its log and applied index.
    Status {
        #[command(flatten)]
        conn: Conn,
        /// Print one JSON document instead (fields: docs/operations.md, "JSON output").
        #[arg(long)]
        json: bool,
    },
    /// Ask one node's /healthz or /readyz (for container healthchecks).
    Health(health::HealthArgs),
    /// Handles: mint, get, put, delete, len; list and evict (admin).
    Handle {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: handle::HandleCmd,
    },
    /// The request-state key ring: create, rotate, retire, list.
    Keyring {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: keyring::KeyringCmd,
    },
    /// State-tool keys: put, get, delete, list, exists.
    Kv {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: kv::KvCmd,
    },
    /// Serve the state tool as MCP tools (stateless Streamable HTTP at /mcp).
    Mcp {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        args: mcp::McpArgs,
    },
    /// Authentication: enable, disable, status.
    Auth {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: auth::AuthCmd,
    },
    /// Users and their tokens: add, remove, list, token-rotate, grant-role, revoke-role.
    User {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: auth::UserCmd,
    },
    /// Roles and their grants: add, remove, grant, revoke, list.
    Role {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: auth::RoleCmd,
    },
    /// Namespaces: quotas and owner-bound handle stores; usage.
    Namespace {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: auth::NamespaceCmd,
    },
    /// Print changes to state keys or handles as they happen (or from a
    /// revision).
    Watch {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        args: watch::WatchArgs,
    },
    /// Membership: list, add a learner, promote, remove.
    Member {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: member::MemberCmd,
    },
    /// Backups: save one from a live cluster, check one, restore one into a
    /// new cluster.
    Snapshot {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: snapshot::SnapshotCmd,
    },
}

/// Whether a call refused with `code` may succeed on another node.
fn another_node_may_answer(code: tonic::Code) -> bool {
    use tonic::Code;
    matches!(
        code,
        Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Cancelled
    )
}

/// A command's failure: what to print and the exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<handlestore_client::Error> for CliError {
    fn from(e: handlestore_client::Error) -> Self {
        CliError::new(2, e.to_string())
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::new(2, format!("{e:#}"))
    }
}

/// A server's log filter when `RUST_LOG` is not set: info, but the Raft
/// library's own info lines, which are internal detail (ours say what
/// matters).
pub fn node_log_filter() -> String {
    format!("info,{}", crate::raft::LIBRARY_LOG_FILTER)
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let server = matches!(cli.command, Command::Node(_) | Command::Dev(_) | Command::Mcp { .. });
    let filter = if server { node_log_filter() } else { "warn".into() };
    crate::observe::logs::init(&filter, cli.log_format);
    // A node's runtime is its own choice (--worker-threads); the other
    // commands take tokio's default.
    let built = match &cli.command {
        Command::Node(args) => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let scheduler = node::scheduler(args.tuning.worker_threads, cores);
            match scheduler {
                node::Scheduler::EventLoop => tracing::info!("network and Raft work on one event-loop thread"),
                node::Scheduler::Pool(n) => tracing::info!("network and Raft work on {n} worker threads"),
            }
            node::runtime(scheduler)
        }
        _ => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let res = rt.block_on(async move {
        match cli.command {
            Command::Node(args) => node::run(*args).await,
            Command::Dev(args) => dev::run(args).await,
            Command::Certs(args) => certs::run(args),
            Command::Status { conn, json } => status::run(&conn, json).await,
            Command::Health(args) => health::run(args).await,
            Command::Handle { conn, cmd } => handle::run(&conn, cmd).await,
            Command::Keyring { conn, cmd } => keyring::run(&conn, cmd).await,
            Command::Kv { conn, cmd } => kv::run(&conn, cmd).await,
            Command::Mcp { conn, args } => mcp::run(&conn, args).await,
            Command::Member { conn, cmd } => member::run(&conn, cmd).await,
            Command::Snapshot { conn, cmd } => snapshot::run(&conn, cmd).await,
            Command::Watch { conn, args } => watch::run(&conn, args).await,
            Command::Auth { conn, cmd } => auth::run_auth(&conn, cmd).await,
            Command::User { conn, cmd } => auth::run_user(&conn, cmd).await,
            Command::Role { conn, cmd } => auth::run_role(&conn, cmd).await,
            Command::Namespace { conn, cmd } => auth::run_namespace(&conn, cmd).await,
        }
    });
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled: a signal that arrives while
/// the node is still opening its store or before the server's accept loop
/// first looks at the future stops the node cleanly instead of killing it.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
    async move {
        let (Ok(mut int), Ok(mut term)) = handlers else {
            // Without signal handlers, run until killed.
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => {},
            _ = term.recv() => {},
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Clap checks its definitions only when asked (or at parse time, by a
    /// panic): two arguments with one id, such as a global `--key` and a
    /// subcommand's positional `key`, fail here instead.
    #[test]
    fn every_subcommand_is_defined_consistently() {
        super::Cli::command().debug_assert();
    }
}
