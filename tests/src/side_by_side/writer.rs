//! The same writes on each system: a client writes key after key, each
//! with a value of its own, and remembers the ones acknowledged; a
//! linearizable read says whether one is still there. [`Writer::set`]
//! overwrites a key, for the register workload (`registers.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use async_nats::jetstream::kv;
use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use serde_json::Value;

/// A client of one system.
#[derive(Clone)]
pub enum Writer {
    Handlestore(Arc<ClusterHandleStore<Value>>),
    Etcd(Box<etcd_client::Client>),
    Nats(Box<kv::Store>),
}

impl Writer {
    /// Writes writer `w`'s `n`th value; returns the key it is under (a
    /// handle handlestore minted, or the key chosen).
    pub async fn write(&self, w: usize, n: u64) -> Result<(String, String)> {
        let (key, value) = (format!("side.w{w}-{n}"), format!("{w}:{n}"));
        match self {
            Writer::Handlestore(s) => return Ok((s.mint(Value::String(value.clone()), Ttl::Default).await?, value)),
            Writer::Etcd(c) => drop(c.clone().put(key.as_str(), value.as_str(), None).await?),
            Writer::Nats(kv) => drop(kv.put(&key, value.clone().into()).await?),
        }
        Ok((key, value))
    }

    /// Overwrites `key` with `value` (handlestore: the handle `key`, made
    /// if missing).
    pub async fn set(&self, key: &str, value: &str) -> Result<()> {
        match self {
            Writer::Handlestore(s) => drop(s.put(key, Value::String(value.into()), Ttl::Default).await?),
            Writer::Etcd(c) => drop(c.clone().put(key, value, None).await?),
            Writer::Nats(kv) => drop(kv.put(key, value.to_string().into()).await?),
        }
        Ok(())
    }

    /// A key for register `k` (handlestore: a handle it mints).
    pub async fn register_key(&self, k: usize) -> Result<String> {
        Ok(match self {
            Writer::Handlestore(s) => s.mint(Value::Null, Ttl::Default).await?,
            _ => format!("side.register{k}"),
        })
    }

    /// The value under `key`, read linearizably (etcd's default read;
    /// NATS' non-direct get, answered by the stream's leader).
    pub async fn read(&self, key: &str) -> Result<Option<String>> {
        Ok(match self {
            Writer::Handlestore(s) => s
                .get_with(key, Consistency::Linearizable)
                .await?
                .and_then(|v| v.as_str().map(String::from)),
            Writer::Etcd(c) => {
                let got = c.clone().get(key, None).await?;
                let kv = got.kvs().first();
                kv.map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
            }
            Writer::Nats(kv) => kv.get(key).await?.map(|b| String::from_utf8_lossy(&b).into_owned()),
        })
    }
}

/// Clients writing in a loop until stopped. An error is an unknown
/// outcome (the write may or may not be applied), never an acknowledgement.
pub struct Writers {
    acked: Arc<Mutex<HashMap<String, String>>>,
    unknown: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    pub fn start(writer: &Writer, clients: usize) -> Self {
        let acked: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let (unknown, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let tasks = (0..clients)
            .map(|w| {
                let (writer, acked, unknown, stop) = (writer.clone(), acked.clone(), unknown.clone(), stop.clone());
                tokio::spawn(async move {
                    for n in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        match writer.write(w, n).await {
                            Ok((key, value)) => drop(acked.lock().expect("lock").insert(key, value)),
                            Err(_) => drop(unknown.fetch_add(1, Ordering::Relaxed)),
                        }
                    }
                })
            })
            .collect();
        Self {
            acked,
            unknown,
            stop,
            tasks,
        }
    }

    pub fn acked_so_far(&self) -> usize {
        self.acked.lock().expect("lock").len()
    }

    /// Stops every client at once, dropping the writes in flight (their
    /// outcome unknown); returns the acknowledged writes and how many
    /// ended in an error.
    pub fn abort(self) -> (HashMap<String, String>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in &self.tasks {
            t.abort();
        }
        let unknown = self.unknown.load(Ordering::Relaxed) + self.tasks.len() as u64;
        (self.acked.lock().expect("lock").clone(), unknown)
    }
}
