//! `MemoryHandleStore<T>`: the HandleStore in process. Same semantics as
//! the cluster store (it passes the same contract suite), nothing survives a
//! restart, nothing is shared between processes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::handle_store::HandleStore;
use crate::ttl::Ttl;

struct Entry<T> {
    value: T,
    expires_at: Option<Instant>,
}

impl<T> Entry<T> {
    fn live(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|e| e > now)
    }
}

struct State<T> {
    map: HashMap<String, Entry<T>>,
    closed: bool,
}

/// Options of a [`MemoryHandleStore`].
#[derive(Debug, Clone, Default)]
pub struct MemoryOptions {
    /// TTL used for `Ttl::Default` (none: never expires).
    pub default_ttl: Option<Duration>,
    /// Minted ids look like `<prefix>-<26 chars>`.
    pub prefix: String,
    /// Remove expired entries in the background this often (expired entries
    /// are invisible either way; this only frees memory).
    pub gc_interval: Option<Duration>,
}

/// An in-process [`HandleStore`].
pub struct MemoryHandleStore<T> {
    state: Arc<Mutex<State<T>>>,
    opts: MemoryOptions,
    gc: Option<tokio::task::JoinHandle<()>>,
}

impl<T: Clone + Send + Sync + 'static> MemoryHandleStore<T> {
    /// A store with default options (no default TTL, no prefix, no GC).
    pub fn new() -> Self {
        Self::with_options(MemoryOptions::default())
    }

    /// A store with options. With a GC interval this must be called inside a
    /// tokio runtime.
    pub fn with_options(opts: MemoryOptions) -> Self {
        let state = Arc::new(Mutex::new(State {
            map: HashMap::new(),
            closed: false,
        }));
        let gc = opts.gc_interval.filter(|d| !d.is_zero()).map(|every| {
            let weak: Weak<Mutex<State<T>>> = Arc::downgrade(&state);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    let Some(state) = weak.upgrade() else { return };
                    let now = Instant::now();
                    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                    s.map.retain(|_, e| e.live(now));
                }
            })
        });
        Self { state, opts, gc }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State<T>>> {
        let guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if guard.closed { Err(Error::Closed) } else { Ok(guard) }
    }

    fn expiry(&self, ttl: Ttl) -> Option<Instant> {
        ttl.resolve(self.opts.default_ttl).map(|d| Instant::now() + d)
    }

    /// The number of entries held, expired or not (for tests of the GC).
    pub fn raw_len(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).map.len()
    }
}

impl<T: Clone + Send + Sync + 'static> Default for MemoryHandleStore<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for MemoryHandleStore<T> {
    fn drop(&mut self) {
        if let Some(gc) = &self.gc {
            gc.abort();
        }
    }
}

fn check_id(id: &str) -> Result<()> {
    crate::id::validate_handle_id(id).map_err(Error::InvalidArgument)
}

#[async_trait]
impl<T: Clone + Send + Sync + 'static> HandleStore<T> for MemoryHandleStore<T> {
    async fn mint(&self, value: T, ttl: Ttl) -> Result<String> {
        let expires_at = self.expiry(ttl);
        let mut s = self.lock()?;
        let now = Instant::now();
        loop {
            let id = crate::id::new_handle_id(&self.opts.prefix);
            // 128 random bits do not collide in practice; be exact anyway.
            if s.map.get(&id).is_some_and(|e| e.live(now)) {
                continue;
            }
            s.map.insert(id.clone(), Entry { value, expires_at });
            return Ok(id);
        }
    }

    async fn put(&self, id: &str, value: T, ttl: Ttl) -> Result<bool> {
        check_id(id)?;
        let expires_at = self.expiry(ttl);
        let mut s = self.lock()?;
        let now = Instant::now();
        let old = s.map.insert(id.to_string(), Entry { value, expires_at });
        Ok(old.is_some_and(|e| e.live(now)))
    }

    async fn get(&self, id: &str) -> Result<Option<T>> {
        check_id(id)?;
        let s = self.lock()?;
        let now = Instant::now();
        Ok(s.map.get(id).filter(|e| e.live(now)).map(|e| e.value.clone()))
    }

    async fn delete(&self, id: &str) -> Result<bool> {
        check_id(id)?;
        let mut s = self.lock()?;
        let now = Instant::now();
        Ok(s.map.remove(id).is_some_and(|e| e.live(now)))
    }

    async fn len(&self) -> Result<u64> {
        let s = self.lock()?;
        let now = Instant::now();
        Ok(s.map.values().filter(|e| e.live(now)).count() as u64)
    }

    async fn update(&self, id: &str, f: &mut (dyn for<'a> FnMut(&'a mut T) + Send)) -> Result<Option<T>> {
        check_id(id)?;
        // The lock makes read-modify-write atomic here.
        let mut s = self.lock()?;
        let now = Instant::now();
        match s.map.get_mut(id).filter(|e| e.live(now)) {
            Some(e) => {
                f(&mut e.value);
                Ok(Some(e.value.clone()))
            }
            None => Ok(None),
        }
    }

    async fn close(&self) -> Result<()> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.closed = true;
        s.map.clear();
        if let Some(gc) = &self.gc {
            gc.abort();
        }
        Ok(())
    }
}
