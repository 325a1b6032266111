//! [`BindSessions`]: a tower layer around rmcp's `StreamableHttpService`
//! that binds each legacy session to the principal that created it, on
//! every replica. It names the request's principal (by a function the
//! server gives: its own authentication decides who the caller is), makes
//! it current while rmcp serves the request (so the session store records
//! it at `initialize` and checks it at restore), and answers 404 to a
//! request whose `Mcp-Session-Id` belongs to someone else, or to a session
//! the cluster no longer has (deleted on another replica, or expired). It
//! also pushes a used session's expiry back, at most once a quarter TTL per
//! replica, so a session lives while it is used.
//!
//! A replica remembers what it read of a session only while it watches the
//! session keys, so a session deleted or expired anywhere is refused here
//! at once; without the watch, every request reads the session.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Method, Request, Response, StatusCode};

use crate::watch::ChangeKind;

use super::principal;
use super::session_store::{ClusterSessionStore, Found};

/// Names the principal of a request (`None`: anonymous).
pub type PrincipalFn = dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync;

const SESSION_HEADER: &str = "mcp-session-id";
/// Sessions remembered per replica before the memory is cleared.
const SEEN_CAP: usize = 100_000;

/// The layer; cheap to clone.
#[derive(Clone)]
pub struct BindSessions {
    store: ClusterSessionStore,
    principal: Arc<PrincipalFn>,
    cache: Arc<Cache>,
}

/// What this replica last read of a session.
#[derive(Clone)]
struct Seen {
    principal: Option<String>,
    at: Instant,
}

enum Verdict {
    Allowed,
    Refused,
    Unavailable,
}

/// What this replica knows of sessions (by key), trusted only while a watch
/// on the session keys is live: a session deleted or expired anywhere is
/// forgotten here at once.
#[derive(Default)]
struct Cache {
    following: AtomicBool,
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    /// Bumped whenever the watch starts or stops: what a read begun before
    /// is not remembered (a deletion may have gone by unwatched).
    generation: u64,
    live: bool,
    seen: HashMap<String, Seen>,
}

impl Cache {
    fn with<T>(&self, f: impl FnOnce(&mut CacheInner) -> T) -> Option<T> {
        self.inner.lock().ok().map(|mut inner| f(&mut inner))
    }

    fn lookup(&self, key: &str) -> Option<Seen> {
        self.with(|c| if c.live { c.seen.get(key).cloned() } else { None })
            .flatten()
    }

    fn generation(&self) -> u64 {
        self.with(|c| c.generation).unwrap_or(0)
    }

    fn remember(&self, generation: u64, key: &str, seen: Seen) {
        self.with(|c| {
            if c.live && c.generation == generation {
                if c.seen.len() >= SEEN_CAP {
                    c.seen.clear();
                }
                c.seen.insert(key.to_string(), seen);
            }
        });
    }

    fn forget(&self, key: &str) {
        self.with(|c| c.seen.remove(key));
    }

    fn reset(&self, live: bool) {
        self.with(|c| {
            c.generation += 1;
            c.live = live;
            c.seen.clear();
        });
    }
}

/// Keeps `cache` exact while it exists: forgets the sessions the watch
/// sees deleted or expired, and everything when the watch breaks.
async fn follow(store: ClusterSessionStore, cache: Weak<Cache>) {
    loop {
        match store.watch().await {
            Ok(mut watch) => {
                let Some(c) = cache.upgrade() else { return };
                c.reset(true);
                drop(c);
                loop {
                    let next = watch.next().await;
                    let Some(c) = cache.upgrade() else { return };
                    match next {
                        Ok(batch) => batch
                            .changes
                            .iter()
                            .filter(|change| change.kind != ChangeKind::Put)
                            .for_each(|change| c.forget(&change.key)),
                        Err(e) => {
                            tracing::warn!(error = %e, "session watch ended; checking every request until it is back");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "session watch not started; checking every request"),
        }
        let Some(c) = cache.upgrade() else { return };
        c.reset(false);
        drop(c);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl BindSessions {
    /// Binds sessions in `store` to the principal `principal` names.
    pub fn new(
        store: ClusterSessionStore,
        principal: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            store,
            principal: Arc::new(principal),
            cache: Arc::default(),
        }
    }

    /// Starts the watch that keeps the cache exact, once (it needs a
    /// runtime, which the first request brings).
    fn ensure_following(&self) {
        if !self.cache.following.swap(true, Ordering::AcqRel) {
            tokio::spawn(follow(self.store.clone(), Arc::downgrade(&self.cache)));
        }
    }

    /// How often a used session's expiry is pushed back, per replica.
    fn refresh_after(&self) -> Duration {
        self.store.ttl() / 4
    }

    /// May `principal` use `session_id`?
    async fn check(&self, session_id: &str, principal: &Option<String>) -> Verdict {
        self.ensure_following();
        let key = self.store.key(session_id);
        let recent = self.cache.lookup(&key);
        if let Some(seen) = &recent
            && seen.at.elapsed() < self.refresh_after()
        {
            return verdict(&seen.principal, principal);
        }
        let generation = self.cache.generation();
        match self.store.read(session_id).await {
            Ok(Some(found)) => self.refreshed(session_id, &key, generation, found, principal).await,
            Ok(None) => {
                self.cache.forget(&key);
                Verdict::Refused
            }
            Err(e) => {
                tracing::warn!(error = %e, "session binding not checked");
                recent.map_or(Verdict::Unavailable, |seen| verdict(&seen.principal, principal))
            }
        }
    }

    /// A session read from the cluster: refreshed if it is the caller's.
    async fn refreshed(
        &self,
        session_id: &str,
        key: &str,
        generation: u64,
        found: Found,
        principal: &Option<String>,
    ) -> Verdict {
        if found.record.principal != *principal {
            return Verdict::Refused;
        }
        match self.store.refresh(session_id, &found).await {
            Ok(Some(_)) => {}
            // Changed since the read: refreshed by another replica, or gone.
            Ok(None) => match self.store.read(session_id).await {
                Ok(Some(now)) if now.record.principal == *principal => {}
                Ok(_) => return Verdict::Refused,
                Err(e) => tracing::warn!(error = %e, "session binding not checked again"),
            },
            Err(e) => tracing::warn!(error = %e, "session expiry not refreshed"),
        }
        let seen = Seen {
            principal: found.record.principal,
            at: Instant::now(),
        };
        self.cache.remember(generation, key, seen);
        Verdict::Allowed
    }
}

fn verdict(owner: &Option<String>, caller: &Option<String>) -> Verdict {
    if owner == caller {
        Verdict::Allowed
    } else {
        Verdict::Refused
    }
}

fn status<B: Default>(code: StatusCode) -> Response<B> {
    let mut res = Response::new(B::default());
    *res.status_mut() = code;
    res
}

impl<S> tower::Layer<S> for BindSessions {
    type Service = Bound<S>;

    fn layer(&self, inner: S) -> Bound<S> {
        Bound {
            inner,
            binding: self.clone(),
        }
    }
}

/// The rmcp service wrapped by [`BindSessions`].
#[derive(Clone)]
pub struct Bound<S> {
    inner: S,
    binding: BindSessions,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl<S, B, RB> tower::Service<Request<B>> for Bound<S>
where
    S: tower::Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
    RB: Default + Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<RB>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let (parts, body) = req.into_parts();
        let principal = (self.binding.principal)(&parts);
        let session = parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let deleting = parts.method == Method::DELETE;
        let req = Request::from_parts(parts, body);
        // The clone serves later calls; the one made ready serves this one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let binding = self.binding.clone();
        Box::pin(async move {
            if let Some(id) = &session {
                match binding.check(id, &principal).await {
                    Verdict::Allowed => {}
                    Verdict::Refused => return Ok(status(StatusCode::NOT_FOUND)),
                    Verdict::Unavailable => return Ok(status(StatusCode::SERVICE_UNAVAILABLE)),
                }
            }
            let res = principal::scope(principal, inner.call(req)).await;
            if deleting && let Some(id) = &session {
                binding.cache.forget(&binding.store.key(id));
            }
            res
        })
    }
}
