//! A leader's Raft wire connections, by peer address.

use std::time::Duration;

use super::*;

/// How long a peer found not to speak the Raft wire is spoken to over gRPC
/// before the wire is tried again (it may have been upgraded meanwhile).
pub const RETRY_UNSUPPORTED: Duration = Duration::from_secs(60);
/// How long, after a connection to a peer failed, its calls go over gRPC
/// before the wire is tried again.
pub const RETRY_FAILED: Duration = Duration::from_secs(1);
/// Idle connections kept per peer.
const MAX_IDLE: usize = 4;

/// A node's Raft wire connections, by peer address. openraft asks for a new
/// network client for every read round (one heartbeat to each follower),
/// besides the one of each replication stream: they all take a connection
/// from here and give it back, so a connection is opened once, not once per
/// round. At most one caller connects to a peer at a time, and for a while
/// after that failed the others use gRPC, as before the wire: a paused or
/// cut-off peer costs one socket, not one per read round.
#[derive(Default)]
pub struct WirePool {
    peers: std::sync::Mutex<std::collections::HashMap<String, Pooled>>,
}

#[derive(Default)]
struct Pooled {
    idle: Vec<WireConn>,
    /// A caller is connecting to the peer.
    connecting: bool,
    /// Until then calls go over gRPC.
    grpc_until: Option<std::time::Instant>,
    /// The last connection found the peer not speaking the wire.
    unsupported: bool,
    /// The generation of the peer's name its idle connections were opened
    /// at (see `names`).
    generation: u64,
}

/// What [`WirePool::take`] found for a peer.
pub enum Taken<'a> {
    /// An open connection (the peer may have closed it since).
    Idle(WireConn),
    /// None open: the caller connects, and says how it went.
    Connect(ConnectSlot<'a>),
    /// Use gRPC for this call: the peer does not speak the wire, could not
    /// be reached a moment ago, or another caller is connecting to it.
    Grpc,
}

/// The right to connect to a peer, held by one caller at a time.
pub struct ConnectSlot<'a> {
    pool: &'a WirePool,
    addr: String,
    done: bool,
}

/// How a connection attempt went.
pub enum Connected {
    Yes,
    Failed,
    Unsupported,
}

impl ConnectSlot<'_> {
    /// Reports the attempt; returns true if the peer was just found not to
    /// speak the wire (to log it once).
    pub fn finish(mut self, how: Connected) -> bool {
        self.done = true;
        let mut peers = self.pool.lock();
        let p = peers.entry(self.addr.clone()).or_default();
        p.connecting = false;
        let now = std::time::Instant::now();
        match how {
            Connected::Yes => {
                p.unsupported = false;
                false
            }
            Connected::Failed => {
                p.grpc_until = Some(now + RETRY_FAILED);
                false
            }
            Connected::Unsupported => {
                p.grpc_until = Some(now + RETRY_UNSUPPORTED);
                p.idle.clear();
                !std::mem::replace(&mut p.unsupported, true)
            }
        }
    }
}

impl Drop for ConnectSlot<'_> {
    fn drop(&mut self) {
        // The caller was cancelled while connecting: free the slot.
        if !self.done
            && let Some(p) = self.pool.lock().get_mut(&self.addr)
        {
            p.connecting = false;
        }
    }
}

impl WirePool {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Pooled>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle connection to `addr`, else the right to open one, else gRPC.
    /// Idle connections opened before the peer's name resolved elsewhere
    /// (an older `generation`) are closed.
    pub fn take(&self, addr: &str, generation: u64) -> Taken<'_> {
        let mut peers = self.lock();
        let p = peers.entry(addr.to_string()).or_default();
        if p.generation != generation {
            p.idle.clear();
            p.generation = generation;
        }
        if let Some(conn) = p.idle.pop() {
            return Taken::Idle(conn);
        }
        self.slot(p, addr)
    }

    /// After a kept connection failed: the right to open a new one, else
    /// gRPC.
    pub fn reconnect(&self, addr: &str) -> Taken<'_> {
        let mut peers = self.lock();
        let p = peers.entry(addr.to_string()).or_default();
        self.slot(p, addr)
    }

    fn slot<'a>(&'a self, p: &mut Pooled, addr: &str) -> Taken<'a> {
        if p.connecting || p.grpc_until.is_some_and(|t| std::time::Instant::now() < t) {
            return Taken::Grpc;
        }
        p.grpc_until = None;
        p.connecting = true;
        Taken::Connect(ConnectSlot {
            pool: self,
            addr: addr.to_string(),
            done: false,
        })
    }

    /// Gives back a connection whose last call was answered (kept unless
    /// the peer's name resolved elsewhere since it opened).
    pub fn give_back(&self, addr: &str, conn: WireConn) {
        let mut peers = self.lock();
        let p = peers.entry(addr.to_string()).or_default();
        if p.idle.len() < MAX_IDLE && conn.generation() == p.generation {
            p.idle.push(conn);
        }
    }
}
