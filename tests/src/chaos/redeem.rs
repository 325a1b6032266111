//! Single-use request state under faults: two clients, each starting from
//! another node, race to redeem the same tokens (`SingleUse::redeem`, what
//! `RequestStateCodec::with_single_use` calls) through every fault; and
//! their checker (i): no token is accepted twice, and a token accepted
//! during the run is refused when redeemed again after it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use handlestore_client::SingleUse;
use serde::Serialize;
use tokio::task::JoinHandle;

use crate::creds::Credentials;

/// Longer than a run: a redemption must still be on record at the end.
const KEEP: Duration = Duration::from_secs(3600);

/// One redemption: the token and what it answered (`Err`: unknown).
type Attempt = (String, Result<bool, String>);

/// The checks over every redemption.
#[derive(Debug, Default, Clone, Serialize)]
pub struct RedeemChecks {
    pub tokens: usize,
    pub accepted: usize,
    pub refused: usize,
    pub unknown: usize,
    pub violations: Vec<String>,
}

/// The racing redeemers, running until `stop`.
pub struct Redeemers {
    tasks: Vec<JoinHandle<Vec<Attempt>>>,
    check: SingleUse,
}

impl Redeemers {
    pub fn start(creds: &Credentials, endpoints: &[String], seed: u64, stop: &Arc<AtomicBool>) -> Result<Self> {
        let mut tasks = Vec::new();
        for i in 0..2 {
            let mut order = endpoints.to_vec();
            order.rotate_left(i % endpoints.len().max(1));
            let client = creds
                .builder(order)
                .namespace("chaos")
                .deadline(Duration::from_secs(3))
                .attempt_timeout(Duration::from_secs(1))
                .build()?;
            tasks.push(tokio::spawn(race(SingleUse::new(&client), seed, stop.clone())));
        }
        let checker = creds.builder(endpoints.to_vec()).namespace("chaos").build()?;
        Ok(Self {
            tasks,
            check: SingleUse::new(&checker),
        })
    }

    /// Waits for the redeemers, then redeems every accepted token again.
    pub async fn finish(self) -> RedeemChecks {
        let mut attempts = Vec::new();
        for t in self.tasks {
            attempts.extend(t.await.unwrap_or_default());
        }
        let mut checks = judge(&attempts);
        let accepted: Vec<&String> = attempts
            .iter()
            .filter(|(_, r)| matches!(r, Ok(true)))
            .map(|(t, _)| t)
            .collect();
        for token in accepted {
            match self.check.redeem(token, KEEP).await {
                Ok(false) => {}
                Ok(true) => checks.violations.push(format!("{token}: accepted again after the run")),
                Err(e) => checks
                    .violations
                    .push(format!("{token}: not checked after the run: {e}")),
            }
        }
        checks
    }
}

/// Redeems `chaos-token-<seed>-0`, `-1`, ... in turn until `stop`; the
/// other redeemer goes through the same tokens at about the same pace.
async fn race(single: SingleUse, seed: u64, stop: Arc<AtomicBool>) -> Vec<Attempt> {
    let mut attempts = Vec::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let token = format!("chaos-token-{seed}-{n}");
        let outcome = single.redeem(&token, KEEP).await.map_err(|e| e.to_string());
        attempts.push((token, outcome));
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    attempts
}

/// No token accepted twice.
fn judge(attempts: &[Attempt]) -> RedeemChecks {
    let mut accepted: HashMap<&str, usize> = HashMap::new();
    let mut checks = RedeemChecks::default();
    for (token, outcome) in attempts {
        let count = accepted.entry(token.as_str()).or_default();
        match outcome {
            Ok(true) => {
                *count += 1;
                checks.accepted += 1;
            }
            Ok(false) => checks.refused += 1,
            Err(_) => checks.unknown += 1,
        }
    }
    checks.tokens = accepted.len();
    let mut twice: Vec<String> = accepted
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(t, n)| format!("{t}: accepted {n} times"))
        .collect();
    twice.sort();
    checks.violations.extend(twice);
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_accepted_twice_is_a_violation() {
        let a = |t: &str, r: Result<bool, String>| (t.to_string(), r);
        let fine = [
            a("t1", Ok(true)),
            a("t1", Ok(false)),
            a("t2", Err("timeout".into())),
            a("t2", Ok(true)),
        ];
        let checks = judge(&fine);
        assert!(checks.violations.is_empty(), "{checks:?}");
        assert_eq!(
            (checks.tokens, checks.accepted, checks.refused, checks.unknown),
            (2, 2, 1, 1)
        );
        let twice = [a("t1", Ok(true)), a("t1", Ok(true))];
        assert_eq!(judge(&twice).violations, ["t1: accepted 2 times"]);
    }
}
