//! Peers' names. A member's address is kept as written ("hs-1.hs-peers:7400"
//! in `--initial-cluster` and in the membership) and resolved whenever a
//! connection to it opens (the Raft wire and every gRPC channel dial
//! through [`Names::connect`]), so a member re-created on another address
//! under its name (a Kubernetes pod rescheduled) is reached there, and a
//! name that does not resolve yet (a pod not created yet) is a peer that
//! cannot be reached, retried with openraft's backoff like any other.
//! Nothing keeps an address for long:
//!
//! - an answer serves the connections opened within [`FRESH_FOR`] of it,
//!   no longer;
//! - a name in use is looked up again every [`REFRESH_EVERY`]; when it
//!   resolves elsewhere its generation ([`Names::current`]) moves on, and
//!   the connections opened before are replaced at their next use (one to
//!   an address that vanished without a word would hang until HTTP/2's
//!   keep-alive gave up on it, idle ones until their next call did);
//! - one lookup per name at a time: callers join the one running and wait
//!   for it at most [`LOOKUP_WAIT`] (a resolver that does not answer ends
//!   the lookup by its own timeouts; callers giving up on lookups must not
//!   pile them up on the blocking pool). A lookup is a task of its own, so
//!   it runs to its end and its answer is kept whoever still waits;
//! - a resolver slower than that (glibc waits 5 s for a lost UDP answer,
//!   a known pause of cluster DNS) does not cut a name off: its last
//!   answer, if younger than [`STALE_FOR`], serves meanwhile;
//! - a name that did not resolve stays unresolved for [`FAILED_FOR`]:
//!   callers fail at once, so a missing name costs one lookup a second per
//!   node, not one per call.
//!
//! The log says when a name stops resolving, every [`SUMMARY_EVERY`] while
//! it does not, when it resolves again and when it resolves elsewhere. An
//! address whose host is an IP is never looked up.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::net::TcpStream;

pub use crate::raft::net::reach::SUMMARY_EVERY;

/// How long an answer serves new connections.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// How often a name in use is looked up again.
pub const REFRESH_EVERY: Duration = Duration::from_secs(2);
/// How long a caller waits for a lookup (the lookup itself goes on).
pub const LOOKUP_WAIT: Duration = Duration::from_millis(500);
/// How long a name that did not resolve is taken as unresolved.
pub const FAILED_FOR: Duration = Duration::from_secs(1);
/// How long an answer serves while a lookup is slower than [`LOOKUP_WAIT`].
pub const STALE_FOR: Duration = Duration::from_secs(30);

type Answer = Result<Vec<SocketAddr>, String>;
/// Addresses and the generation of the answer that gave them.
type Resolved = (Vec<SocketAddr>, u64);
type Lookup = Shared<BoxFuture<'static, Result<Resolved, String>>>;

/// Every peer name this node resolves, shared by all its connections.
#[derive(Clone, Default)]
pub struct Names {
    names: Arc<Mutex<HashMap<String, Name>>>,
}

/// A name that did not resolve.
#[derive(Debug, Clone)]
struct Failing {
    since: Instant,
    at: Instant,
    why: String,
    said: Instant,
}

#[derive(Default)]
struct Name {
    /// Its last answer's addresses, sorted.
    addrs: Vec<SocketAddr>,
    /// Moves on each time the name resolves elsewhere.
    generation: u64,
    /// When its last lookup started, and when one last answered.
    asked: Option<Instant>,
    answered: Option<Instant>,
    failing: Option<Failing>,
    running: Option<Lookup>,
}

/// What to log, decided under the lock and logged outside it.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    First(Vec<SocketAddr>),
    Moved { from: Vec<SocketAddr>, to: Vec<SocketAddr> },
    Back { after: Duration, to: Vec<SocketAddr> },
    Fails(String),
    StillFails { since: Duration, why: String },
}

/// What a caller does about a name now.
enum Next {
    Use(Resolved),
    Fail(String),
    /// Wait for this lookup; if it is slow, use what it may fall back on.
    Wait(Lookup, Option<Resolved>),
}

impl Name {
    /// What to do now; `None`: start a lookup and wait for it.
    fn next(&self, now: Instant) -> Option<Next> {
        if let Some(f) = &self.failing
            && now.saturating_duration_since(f.at) < FAILED_FOR
        {
            return Some(Next::Fail(f.why.clone()));
        }
        if self
            .answered
            .is_some_and(|t| now.saturating_duration_since(t) < FRESH_FOR)
        {
            return Some(Next::Use((self.addrs.clone(), self.generation)));
        }
        self.running.clone().map(|l| Next::Wait(l, self.stale(now)))
    }

    /// Its last answer, while it may stand in for a slow lookup: not
    /// after the name stopped resolving, nor once older than
    /// [`STALE_FOR`].
    fn stale(&self, now: Instant) -> Option<Resolved> {
        let young = self
            .answered
            .is_some_and(|t| now.saturating_duration_since(t) < STALE_FOR);
        (young && self.failing.is_none()).then(|| (self.addrs.clone(), self.generation))
    }

    /// Whether a name in use is due to be looked up again.
    fn due(&self, now: Instant) -> bool {
        let failed_lately = self
            .failing
            .as_ref()
            .is_some_and(|f| now.saturating_duration_since(f.at) < FAILED_FOR);
        self.running.is_none()
            && !failed_lately
            && self
                .asked
                .is_none_or(|t| now.saturating_duration_since(t) >= REFRESH_EVERY)
    }

    fn answer(&mut self, answer: &Answer, now: Instant) -> Option<Line> {
        self.running = None;
        match answer {
            Ok(addrs) => self.resolved(addrs, now),
            Err(why) => self.failed(why, now),
        }
    }

    fn resolved(&mut self, addrs: &[SocketAddr], now: Instant) -> Option<Line> {
        self.answered = Some(now);
        let was = std::mem::replace(&mut self.addrs, addrs.to_vec());
        let moved = !was.is_empty() && was != addrs;
        if moved {
            self.generation += 1;
        }
        match self.failing.take() {
            Some(f) => Some(Line::Back {
                after: now.saturating_duration_since(f.since),
                to: addrs.to_vec(),
            }),
            None if moved => Some(Line::Moved {
                from: was,
                to: addrs.to_vec(),
            }),
            None if was.is_empty() => Some(Line::First(addrs.to_vec())),
            None => None,
        }
    }

    fn failed(&mut self, why: &str, now: Instant) -> Option<Line> {
        let Some(f) = &mut self.failing else {
            self.failing = Some(Failing {
                since: now,
                at: now,
                why: why.to_string(),
                said: now,
            });
            return Some(Line::Fails(why.to_string()));
        };
        f.at = now;
        f.why = why.to_string();
        if now.saturating_duration_since(f.said) < SUMMARY_EVERY {
            return None;
        }
        f.said = now;
        Some(Line::StillFails {
            since: now.saturating_duration_since(f.since),
            why: why.to_string(),
        })
    }
}

fn log(addr: &str, line: Option<Line>) {
    let list = |a: &[SocketAddr]| a.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    match line {
        Some(Line::First(to)) => tracing::debug!("peer address {addr} resolves to {}", list(&to)),
        Some(Line::Moved { from, to }) => tracing::info!(
            "peer address {addr} now resolves to {} (was {}): connections to it are opened anew",
            list(&to),
            list(&from)
        ),
        Some(Line::Back { after, to }) => tracing::info!(
            "peer address {addr} resolves again, to {}, after {} ms",
            list(&to),
            after.as_millis()
        ),
        Some(Line::Fails(why)) => tracing::warn!(
            "peer address {addr} does not resolve ({why}): its member is taken as unreachable, \
             and the name is looked up again at most every {FAILED_FOR:?} while it is needed"
        ),
        Some(Line::StillFails { since, why }) => tracing::warn!(
            "peer address {addr} still does not resolve, for {} s now ({why})",
            since.as_secs()
        ),
        None => {}
    }
}

impl Names {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Name>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The generation of `addr`'s answers (connections opened at an
    /// earlier one are to be replaced); looks the name up again, in the
    /// background, when that is due.
    pub fn current(&self, addr: &str) -> u64 {
        if addr.parse::<SocketAddr>().is_ok() {
            return 0;
        }
        let mut names = self.lock();
        // Called for every call to a peer: no allocation once it is known.
        if !names.contains_key(addr) {
            names.insert(addr.to_string(), Name::default());
        }
        let name = names.get_mut(addr).expect("inserted");
        if name.due(Instant::now()) && tokio::runtime::Handle::try_current().is_ok() {
            // Runs to its end whoever waits: its answer is recorded.
            drop(self.start(name, addr));
        }
        name.generation
    }

    /// Starts a lookup of `addr`, a task of its own: it runs to its end
    /// and its answer is recorded whoever waits for it (or none does).
    fn start(&self, name: &mut Name, addr: &str) -> Lookup {
        let (names, addr) = (self.clone(), addr.to_string());
        let task = tokio::spawn(async move {
            let answer = lookup(&addr).await;
            // The lock is held for the match alone, never across an await.
            let (line, generation) = match names.lock().get_mut(&addr) {
                Some(n) => (n.answer(&answer, Instant::now()), n.generation),
                None => (None, 0),
            };
            log(&addr, line);
            answer.map(|addrs| (addrs, generation))
        });
        // The task does not panic (a lookup's error is an answer): it
        // fails to join only as the runtime shuts down.
        let lookup = task
            .map(|joined| joined.unwrap_or_else(|e| Err(e.to_string())))
            .boxed()
            .shared();
        name.asked = Some(Instant::now());
        name.running = Some(lookup.clone());
        lookup
    }

    /// `addr`'s addresses now and the generation of the answer that gave
    /// them: an IP as it is; else a fresh answer, a lookup's (the running
    /// one, or one started), the last answer if the lookup is slow (see
    /// [`STALE_FOR`]), or why there is none.
    pub async fn resolve(&self, addr: &str) -> io::Result<Resolved> {
        if let Ok(ip) = addr.parse::<SocketAddr>() {
            return Ok((vec![ip], 0));
        }
        let next = {
            let mut names = self.lock();
            let name = names.entry(addr.to_string()).or_default();
            let now = Instant::now();
            name.next(now)
                .unwrap_or_else(|| Next::Wait(self.start(name, addr), name.stale(now)))
        };
        let (lookup, stale) = match next {
            Next::Use(resolved) => return Ok(resolved),
            Next::Fail(why) => return Err(unresolved(addr, &why)),
            Next::Wait(lookup, stale) => (lookup, stale),
        };
        match tokio::time::timeout(LOOKUP_WAIT, lookup).await {
            Ok(Ok(resolved)) => Ok(resolved),
            Ok(Err(why)) => Err(unresolved(addr, &why)),
            Err(_) => stale.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the resolver gave no address for {addr} within {LOOKUP_WAIT:?}"),
                )
            }),
        }
    }

    /// A TCP connection to `addr` (resolved now, each address in turn) and
    /// the generation of the answer it used.
    pub async fn connect(&self, addr: &str) -> io::Result<(TcpStream, u64)> {
        let (addrs, generation) = self.resolve(addr).await?;
        let tcp = TcpStream::connect(&addrs[..]).await?;
        tcp.set_nodelay(true)?;
        Ok((tcp, generation))
    }
}

fn unresolved(addr: &str, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{addr} does not resolve: {why}"))
}

/// The system resolver's answer (getaddrinfo: /etc/hosts, then DNS as the
/// node's resolv.conf says), sorted.
async fn lookup(addr: &str) -> Answer {
    let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| e.to_string())?
        .collect();
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        return Err("no addresses".into());
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ip: &str) -> Vec<SocketAddr> {
        vec![format!("{ip}:7400").parse().expect("address")]
    }

    #[test]
    fn a_name_that_resolves_elsewhere_moves_its_generation_on() {
        let t0 = Instant::now();
        let mut name = Name::default();
        assert_eq!(name.answer(&Ok(at("10.0.0.1")), t0), Some(Line::First(at("10.0.0.1"))));
        assert_eq!(
            name.answer(&Ok(at("10.0.0.1")), t0),
            None,
            "the same answer says nothing"
        );
        assert_eq!(name.generation, 0, "a first answer is no move");
        assert!(matches!(name.answer(&Ok(at("10.0.0.2")), t0), Some(Line::Moved { .. })));
        assert_eq!(name.generation, 1);
    }

    #[test]
    fn a_name_that_does_not_resolve_is_told_once_then_summarized_then_told_back() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut name = Name::default();
        assert_eq!(
            name.answer(&Err("not found".into()), t0),
            Some(Line::Fails("not found".into()))
        );
        assert_eq!(name.answer(&Err("not found".into()), t0 + ms(1000)), None);
        assert!(matches!(
            name.answer(&Err("not found".into()), t0 + SUMMARY_EVERY),
            Some(Line::StillFails { .. })
        ));
        assert!(matches!(
            name.answer(&Ok(at("10.0.0.3")), t0 + SUMMARY_EVERY + ms(10)),
            Some(Line::Back { .. })
        ));
        assert_eq!(name.generation, 0, "resolving at last is no move");
    }

    #[test]
    fn a_failure_fails_callers_at_once_for_a_while_and_an_answer_serves_for_a_while() {
        let t0 = Instant::now();
        let mut name = Name::default();
        assert!(name.next(t0).is_none(), "nothing known: look it up");
        assert!(name.due(t0));
        name.answer(&Err("not found".into()), t0);
        assert!(matches!(name.next(t0 + FAILED_FOR / 2), Some(Next::Fail(_))));
        assert!(!name.due(t0 + FAILED_FOR / 2), "no lookup while it failed lately");
        assert!(name.next(t0 + FAILED_FOR).is_none());
        name.asked = Some(t0 + FAILED_FOR);
        name.answer(&Ok(at("10.0.0.4")), t0 + FAILED_FOR);
        assert!(matches!(name.next(t0 + FAILED_FOR + FRESH_FOR / 2), Some(Next::Use((a, _))) if a == at("10.0.0.4")));
        assert!(name.next(t0 + FAILED_FOR + FRESH_FOR).is_none(), "an answer ages");
        assert!(!name.due(t0 + FAILED_FOR + REFRESH_EVERY / 2));
        assert!(name.due(t0 + FAILED_FOR + REFRESH_EVERY));
    }

    #[test]
    fn a_slow_lookup_falls_back_on_a_recent_answer_never_on_a_failed_or_old_one() {
        let t0 = Instant::now();
        let mut name = Name::default();
        assert!(name.stale(t0).is_none(), "nothing known");
        name.answer(&Ok(at("10.0.0.5")), t0);
        assert_eq!(name.stale(t0 + FRESH_FOR), Some((at("10.0.0.5"), 0)));
        assert!(name.stale(t0 + STALE_FOR).is_none(), "too old");
        name.answer(&Err("not found".into()), t0 + FRESH_FOR);
        assert!(name.stale(t0 + FRESH_FOR).is_none(), "the name stopped resolving");
    }

    #[tokio::test]
    async fn an_ip_is_never_looked_up() {
        let names = Names::default();
        assert_eq!(names.current("127.0.0.1:1"), 0);
        let (ip, generation) = names.resolve("[::1]:7400").await.expect("an IP");
        assert_eq!(ip, vec!["[::1]:7400".parse::<SocketAddr>().expect("address")]);
        assert_eq!(generation, 0);
        assert!(names.lock().is_empty());
    }

    #[tokio::test]
    async fn callers_at_once_share_one_lookup_and_its_answer() {
        let names = Names::default();
        names.current("localhost:7400");
        let asked = names.lock()["localhost:7400"].asked;
        assert!(asked.is_some(), "a name in use is looked up");
        let (a, b) = tokio::join!(names.resolve("localhost:7400"), names.resolve("localhost:7400"));
        assert_eq!(a.expect("localhost").0, b.expect("localhost").0);
        let n = names.lock();
        let name = &n["localhost:7400"];
        assert_eq!(name.asked, asked, "they joined the lookup running");
        assert!(name.running.is_none() && name.answered.is_some());
    }
}
