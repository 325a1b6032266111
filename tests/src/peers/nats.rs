//! A 3-server NATS JetStream cluster on loopback (the nats-server that
//! `deploy/install-bench-deps.sh` fetches), with one key-value bucket of
//! three replicas, as a NATS user deploys KV for state that must survive
//! a server: every server a JetStream server, the bucket's stream on all
//! three.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use async_nats::jetstream::{self, kv, stream};

use super::{Member, Placement, disk, peer_bin, until_ok, until_ok_or};

/// The bucket every NATS operation uses.
pub const BUCKET: &str = "bench";

/// The servers' names, in order.
pub const NAMES: [&str; 3] = ["n1", "n2", "n3"];

/// How the servers put JetStream's writes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NatsSync {
    /// `sync_interval: always`: each write synced before it is
    /// acknowledged, as handlestore and etcd do.
    Always,
    /// As shipped: synced every two minutes (Jepsen's NATS 2.12.1 analysis
    /// lost acknowledged writes to power failures with it).
    Shipped,
}

pub struct Nats {
    pub members: Vec<Member>,
    /// Each server's client URL.
    pub urls: Vec<String>,
}

/// One server's configuration: JetStream on its disk, clients on
/// `listen`, routes on `cluster` to the other two's (`host:port` each).
fn config(dir: &Path, name: &str, (listen, cluster): (&str, &str), routes: &[&str], sync: NatsSync) -> String {
    let routes: Vec<String> = routes.iter().map(|a| format!("nats://{a}")).collect();
    let sync = match sync {
        NatsSync::Always => "  sync_interval: always\n",
        NatsSync::Shipped => "",
    };
    format!(
        "server_name: {name}\nlisten: {listen}\n\
         jetstream {{\n  store_dir: {:?}\n{sync}}}\n\
         cluster {{\n  name: bench\n  listen: {cluster}\n  routes: [{}]\n}}\n",
        disk(dir, name).join("data").display().to_string(),
        routes.join(", ")
    )
}

/// The bucket's stream as the KV layer makes it, but for two choices:
/// no direct gets (a get is answered by the stream's leader, the
/// linearizable read), and per-message TTLs allowed (for `create_ttl`).
fn bucket_stream() -> stream::Config {
    stream::Config {
        name: format!("KV_{BUCKET}"),
        subjects: vec![format!("$KV.{BUCKET}.>")],
        max_messages_per_subject: 1,
        storage: stream::StorageType::File,
        num_replicas: 3,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: false,
        discard: stream::DiscardPolicy::New,
        allow_message_ttl: true,
        ..Default::default()
    }
}

impl Nats {
    /// Starts three servers in `dir` on loopback and creates the bucket;
    /// ready once its stream has a leader and takes a write (within 60 s).
    pub async fn start(dir: &Path, sync: NatsSync) -> Result<Self> {
        Self::start_on(dir, sync, Placement::Loopback).await
    }

    /// As [`start`](Self::start), the servers placed as `placement` says.
    pub async fn start_on(dir: &Path, sync: NatsSync, placement: Placement<'_>) -> Result<Self> {
        let bin = peer_bin("nats-server");
        // Each server's client and cluster (route) addresses.
        let addrs = placement.addrs(NAMES.len(), (4222, 6222));
        let mut members = Vec::new();
        for (i, (name, (listen, cluster))) in NAMES.iter().zip(&addrs).enumerate() {
            std::fs::create_dir_all(disk(dir, name))?;
            let routes: Vec<&str> = addrs
                .iter()
                .filter(|(l, _)| l != listen)
                .map(|(_, c)| c.as_str())
                .collect();
            let conf = dir.join(format!("{name}.conf"));
            std::fs::write(&conf, config(dir, name, (listen, cluster), &routes, sync))?;
            let args: Vec<OsString> = vec!["-c".into(), conf.into()];
            members.push(placement.start(dir, i, name, &bin, args)?);
        }
        let urls = addrs.iter().map(|(l, _)| format!("nats://{l}")).collect();
        let nats = Self { members, urls };
        until_ok(Duration::from_secs(60), "NATS made no bucket", || async {
            let js = jetstream::new(nats.client().await?);
            js.get_or_create_stream(bucket_stream()).await?;
            Ok(())
        })
        .await?;
        nats.wait_ready(Duration::from_secs(60)).await?;
        // A server learns that the stream takes the bucket's subjects from
        // its routes a little later than the one that answered: until then
        // a write through it is refused ("no stream found for given
        // subject"). Ready means ready through every server.
        until_ok(
            Duration::from_secs(60),
            "NATS' bucket took no write through each server",
            || nats.put_through_each(),
        )
        .await?;
        Ok(nats)
    }

    /// One write to the bucket through a client of each server alone.
    async fn put_through_each(&self) -> Result<()> {
        for url in &self.urls {
            let client = async_nats::ConnectOptions::new()
                .request_timeout(Some(Duration::from_secs(10)))
                .connect(url.as_str())
                .await?;
            let kv = jetstream::new(client).get_key_value(BUCKET).await?;
            kv.put("bench.ready", "1".into()).await?;
        }
        Ok(())
    }

    /// Waits up to `within` for the bucket (as it is: never made again)
    /// to take a write.
    pub async fn wait_ready(&self, within: Duration) -> Result<()> {
        until_ok(within, "NATS' bucket took no write", || self.put_ready()).await
    }

    /// One write to the bucket as it is.
    async fn put_ready(&self) -> Result<()> {
        self.bucket().await?.put("bench.ready", "1".into()).await?;
        Ok(())
    }

    /// As [`wait_ready`](Self::wait_ready) after a fault, but giving up
    /// early once the servers answer for 15 s that the bucket's stream is
    /// not there (their meta group has no such stream: lost, it never
    /// comes back by itself).
    pub async fn wait_back(&self, within: Duration) -> Result<()> {
        let mut gone_since: Option<Instant> = None;
        let gone_for_15s = |error: &str| {
            let gone = error.contains("stream not found");
            gone_since = if gone {
                gone_since.or(Some(Instant::now()))
            } else {
                None
            };
            gone_since.is_some_and(|t| t.elapsed() > Duration::from_secs(15))
        };
        until_ok_or(within, "NATS' bucket took no write", || self.put_ready(), gone_for_15s).await
    }

    /// The servers' process ids (of those running).
    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().filter_map(Member::pid).collect()
    }

    /// The server that leads the bucket's stream (its index in `members`),
    /// as the server a client reaches says.
    pub async fn stream_leader(&self) -> Result<usize> {
        let js = jetstream::new(self.client().await?);
        let mut stream = js.get_stream(format!("KV_{BUCKET}")).await?;
        let info = stream.info().await?;
        let leader = info.cluster.as_ref().and_then(|c| c.leader.clone());
        let leader = leader.context("the bucket's stream has no leader")?;
        NAMES
            .iter()
            .position(|n| *n == leader)
            .with_context(|| format!("the stream's leader {leader:?} is none of the servers"))
    }

    /// A client of every server (it picks one, and fails over).
    pub async fn client(&self) -> Result<async_nats::Client> {
        let opts = async_nats::ConnectOptions::new().request_timeout(Some(Duration::from_secs(60)));
        Ok(opts.connect(self.urls.as_slice()).await?)
    }

    /// The bucket, through a client of its own.
    pub async fn bucket(&self) -> Result<kv::Store> {
        Ok(jetstream::new(self.client().await?).get_key_value(BUCKET).await?)
    }
}
