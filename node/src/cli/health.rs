//! `handlestore health`: asks one node's `/healthz` (or `/readyz`) over
//! plain HTTP; exit 0 when it answers 200. Made for container healthchecks,
//! where there is no curl.

use std::time::Duration;

use super::CliError;

#[derive(clap::Args, Debug)]
pub struct HealthArgs {
    /// The node's address (its client port).
    #[arg(long, default_value = "http://127.0.0.1:7401")]
    pub url: String,
    /// Ask `/readyz` (leader known, applied up to commit) instead of `/healthz`.
    #[arg(long)]
    pub ready: bool,
    /// How long to wait for the answer.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

pub async fn run(args: HealthArgs) -> Result<(), CliError> {
    let base = if args.url.contains("://") {
        args.url.trim_end_matches('/').to_string()
    } else {
        format!("http://{}", args.url.trim_end_matches('/'))
    };
    let url = format!("{base}/{}", if args.ready { "readyz" } else { "healthz" });
    let client = reqwest::Client::builder()
        .timeout(args.timeout)
        .build()
        .map_err(|e| CliError::new(2, e.to_string()))?;
    let resp = client
        .get(&url)
        .send()
        .await
        .map_err(|e| CliError::new(1, format!("{url}: {e}")))?;
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    if status.is_success() {
        print!("{body}");
        Ok(())
    } else {
        Err(CliError::new(1, format!("{url}: {status}: {}", body.trim_end())))
    }
}
