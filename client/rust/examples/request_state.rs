//! Seals or opens MCP request state with a cluster's replicated key ring,
//! from the command line: the other side of the Python client's interop
//! test (a blob sealed by a Rust replica opens in a Python one, and back).
//!
//! ```sh
//! request_state --endpoints 127.0.0.1:7401 --namespace ns seal --mode encrypted \
//!     --subject cart-1 --tool checkout --state '{"step":2}'      # prints the blob
//! request_state --endpoints 127.0.0.1:7401 --namespace ns open --subject cart-1 \
//!     --tool checkout --blob v1e....                               # prints the state, or exits 1
//! ```

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use handlestore_client::request_state::Mode;
use handlestore_client::{Client, RequestStateCodec};

#[derive(Parser)]
struct Args {
    /// handlestore endpoints (comma-separated).
    #[arg(long, env = "HANDLESTORE_ENDPOINTS", value_delimiter = ',', required = true)]
    endpoints: Vec<String>,
    #[arg(long, env = "HANDLESTORE_NAMESPACE", default_value = "default")]
    namespace: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Signed,
    Encrypted,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prints the blob that seals --state (JSON).
    Seal {
        #[arg(long, value_enum)]
        mode: ModeArg,
        #[arg(long)]
        subject: String,
        #[arg(long)]
        tool: Option<String>,
        #[arg(long)]
        state: String,
        /// Seconds the blob stays valid.
        #[arg(long, default_value_t = 600)]
        ttl: u64,
    },
    /// Prints the state a blob seals, or exits with 1 if it does not open.
    Open {
        #[arg(long)]
        subject: String,
        #[arg(long)]
        tool: Option<String>,
        #[arg(long)]
        blob: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = Client::builder(args.endpoints).namespace(args.namespace).build()?;
    match args.cmd {
        Cmd::Seal {
            mode,
            subject,
            tool,
            state,
            ttl,
        } => {
            let mode = match mode {
                ModeArg::Signed => Mode::Signed,
                ModeArg::Encrypted => Mode::Encrypted,
            };
            let codec = RequestStateCodec::from_cluster(&client, mode).await?;
            let state: serde_json::Value = serde_json::from_str(&state)?;
            let blob = codec
                .encode(&state, &subject, tool.as_deref(), Duration::from_secs(ttl))
                .await?;
            println!("{blob}");
        }
        Cmd::Open { subject, tool, blob } => {
            // The mode only matters for sealing: opening reads it off the blob.
            let codec = RequestStateCodec::from_cluster(&client, Mode::Signed).await?;
            match codec.decode(&blob, &subject, tool.as_deref()).await {
                Some(state) => println!("{state}"),
                None => std::process::exit(1),
            }
        }
    }
    Ok(())
}
