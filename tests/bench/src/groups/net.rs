//! openraft's network for one group: its calls go on the node's shared
//! connection to each peer (`wire.rs`), tagged with the group's id.

use std::collections::HashMap;
use std::sync::Arc;

use openraft::BasicNode;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Cfg;
use super::wire::{APPEND, Peer, VOTE};

/// A node's connections to its peers, by node id.
pub type Peers = Arc<HashMap<u64, Arc<Peer>>>;

pub struct Net {
    pub gid: u32,
    pub peers: Peers,
}

pub struct Conn {
    gid: u32,
    target: u64,
    peer: Option<Arc<Peer>>,
}

impl RaftNetworkFactory<Cfg> for Net {
    type Network = Conn;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> Conn {
        Conn {
            gid: self.gid,
            target,
            peer: self.peers.get(&target).cloned(),
        }
    }
}

type Rpc<T, E = RaftError<u64>> = Result<T, RPCError<u64, BasicNode, E>>;

impl Conn {
    /// One call on the shared connection; the peer's answer is the
    /// group's Raft's own result, carried back whole.
    async fn call<Req: Serialize, Resp: DeserializeOwned>(&self, kind: u8, req: &Req, option: &RPCOption) -> Rpc<Resp> {
        let unreachable = |e: std::io::Error| RPCError::Unreachable(Unreachable::new(&e));
        let peer = self
            .peer
            .as_ref()
            .ok_or_else(|| unreachable(std::io::Error::other(format!("no connection to node {}", self.target))))?;
        let body = postcard::to_allocvec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let answer = peer
            .call(kind, self.gid, &body, option.hard_ttl())
            .await
            .map_err(unreachable)?;
        let answer: Result<Resp, RaftError<u64>> =
            postcard::from_bytes(&answer).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        answer.map_err(|e| RPCError::RemoteError(openraft::error::RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<Cfg> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Cfg>,
        option: RPCOption,
    ) -> Rpc<AppendEntriesResponse<u64>> {
        self.call(APPEND, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<Cfg>,
        _option: RPCOption,
    ) -> Rpc<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>> {
        Err(RPCError::Network(NetworkError::new(&std::io::Error::other(
            "no snapshots in this measurement",
        ))))
    }

    async fn vote(&mut self, rpc: VoteRequest<u64>, option: RPCOption) -> Rpc<VoteResponse<u64>> {
        self.call(VOTE, &rpc, &option).await
    }
}
