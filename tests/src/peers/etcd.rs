//! A 3-member etcd cluster, as etcd documents a local cluster: one data
//! directory per member, fsync on every commit.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use super::{Member, Placement, disk, peer_bin, until_ok};

/// Which etcd a cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdRelease {
    /// 3.7.3, built from the Go module proxy (deploy/etcd): the bench's
    /// `etcd`, the release a careful operator installs today.
    V3_7,
    /// 3.5.30, from Debian's unstable suite: the bench's `etcd-3.5`.
    V3_5,
    /// The machine's own (Debian 12's 3.4.23): `etcd-3.4`, for the
    /// history of the ratios.
    V3_4,
}

impl EtcdRelease {
    /// The binary it runs.
    pub fn bin(self) -> PathBuf {
        match self {
            EtcdRelease::V3_7 => peer_bin("etcd"),
            EtcdRelease::V3_5 => peer_bin("etcd-3.5"),
            EtcdRelease::V3_4 => PathBuf::from("etcd"),
        }
    }

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            EtcdRelease::V3_7 => "etcd 3.7.3",
            EtcdRelease::V3_5 => "etcd 3.5.30",
            EtcdRelease::V3_4 => "etcd 3.4",
        }
    }

    /// Says so when `bin` is not the release asked for (the install
    /// script's fallback where Debian's unstable suite is out of reach).
    fn check(self, bin: &Path) {
        let want = match self {
            EtcdRelease::V3_7 => "etcd Version: 3.7.3",
            EtcdRelease::V3_5 => "etcd Version: 3.5.30",
            EtcdRelease::V3_4 => "etcd Version: 3.4.",
        };
        let out = Command::new(bin).arg("--version").output();
        let printed = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        if !printed.contains(want) {
            let first = printed.lines().next().unwrap_or("nothing");
            eprintln!("WARNING: {} printed {first:?}, not {want:?}", bin.display());
        }
    }
}

/// The members' names, in order.
pub const NAMES: [&str; 3] = ["e1", "e2", "e3"];

pub struct Etcd {
    pub members: Vec<Member>,
    pub endpoints: Vec<String>,
}

/// Member `name`'s flags: data under its disk, its client and peer URLs
/// (`host:port` each).
fn flags(dir: &Path, name: &str, client: &str, peer: &str, initial: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--name".into(), name.into(), "--data-dir".into()];
    args.push(disk(dir, name).join("data").into());
    for (flag, addr) in [
        ("--listen-client-urls", client),
        ("--advertise-client-urls", client),
        ("--listen-peer-urls", peer),
        ("--initial-advertise-peer-urls", peer),
    ] {
        args.push(flag.into());
        args.push(format!("http://{addr}").into());
    }
    for a in ["--initial-cluster", initial, "--initial-cluster-state", "new"] {
        args.push(a.into());
    }
    for a in [
        "--initial-cluster-token",
        "bench",
        "--logger",
        "zap",
        "--log-level",
        "error",
    ] {
        args.push(a.into());
    }
    args
}

impl Etcd {
    /// Starts the three members in `dir` on loopback; ready once a
    /// linearizable write and read go through (within 60 s).
    pub async fn start(dir: &Path, release: EtcdRelease) -> Result<Self> {
        Self::start_on(dir, release, Placement::Loopback).await
    }

    /// As [`start`](Self::start), the members placed as `placement` says.
    pub async fn start_on(dir: &Path, release: EtcdRelease, placement: Placement<'_>) -> Result<Self> {
        let bin = release.bin();
        release.check(&bin);
        // Each member's client and peer addresses.
        let addrs = placement.addrs(NAMES.len(), (2379, 2380));
        let initial: Vec<String> = NAMES
            .iter()
            .zip(&addrs)
            .map(|(n, (_, p))| format!("{n}=http://{p}"))
            .collect();
        let initial = initial.join(",");
        let mut members = Vec::new();
        for (i, (name, (client, peer))) in NAMES.iter().zip(&addrs).enumerate() {
            std::fs::create_dir_all(disk(dir, name))?;
            let args = flags(dir, name, client, peer, &initial);
            members.push(placement.start(dir, i, name, &bin, args)?);
        }
        let endpoints = addrs.iter().map(|(c, _)| format!("http://{c}")).collect();
        let etcd = Self { members, endpoints };
        etcd.wait_ready(Duration::from_secs(60)).await?;
        Ok(etcd)
    }

    /// Waits up to `within` for a linearizable write and read to go
    /// through.
    pub async fn wait_ready(&self, within: Duration) -> Result<()> {
        until_ok(within, "etcd took no write", || async {
            let mut c = self.client().await?;
            c.put("bench/ready", "1", None).await?;
            c.get("bench/ready", None).await?;
            Ok(())
        })
        .await
    }

    /// The members' process ids (of those running).
    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().filter_map(Member::pid).collect()
    }

    /// The member that leads, as it says itself (its index in `members`).
    pub async fn leader(&self) -> Result<usize> {
        for (i, endpoint) in self.endpoints.iter().enumerate() {
            let Ok(mut c) = etcd_client::Client::connect([endpoint], None).await else {
                continue;
            };
            let Ok(status) = c.status().await else { continue };
            if status.header().is_some_and(|h| h.member_id() == status.leader()) {
                return Ok(i);
            }
        }
        bail!("no etcd member says it leads")
    }

    /// A client of every member (it balances over them).
    pub async fn client(&self) -> Result<etcd_client::Client> {
        Ok(etcd_client::Client::connect(self.endpoints.clone(), None).await?)
    }
}
