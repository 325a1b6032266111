//! `handlestore member`: list, add (as learner), promote, remove, and
//! hand leadership to another voter.

use std::collections::BTreeSet;

use handlestore_client::NodeChannel as Channel;
use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use super::{CliError, Conn};

#[derive(clap::Subcommand, Debug)]
pub enum MemberCmd {
    /// List members.
    List {
        /// Print JSON instead (fields: docs/operations.md, "JSON output").
        #[arg(long)]
        json: bool,
    },
    /// Add a node as a learner (it receives the log, does not vote).
    Add {
        id: u64,
        /// The new node's HOST:PORT, followed by /PEER_HOST:PEER_PORT when
        /// it has a peer port (--peer-listen).
        addr: String,
        /// Return at once instead of waiting for it to catch up.
        #[arg(long)]
        no_wait: bool,
    },
    /// Make a learner a voter.
    Promote { id: u64 },
    /// Remove a node from the cluster.
    Remove { id: u64 },
    /// Hand leadership to another voter (before maintenance on the
    /// leader): ID, or the voter with the most of the log.
    TransferLeader { id: Option<u64> },
}

/// The status of the first node that answers, and a channel to the leader.
async fn leader(conn: &Conn) -> Result<(pb::StatusResponse, Channel), CliError> {
    // A node that knows no leader passes the question to the next.
    let (s, ch) = conn
        .first_answer(|ch| async move {
            let s = AdminClient::new(ch.clone())
                .status(pb::StatusRequest {})
                .await?
                .into_inner();
            if s.state != "leader" && (s.leader_id == 0 || s.leader_addr.is_empty()) {
                return Err(tonic::Status::unavailable("no leader elected"));
            }
            Ok((s, ch))
        })
        .await
        .map_err(|e| CliError::new(e.code, format!("cannot reach the leader: {}", e.message)))?;
    if s.state == "leader" {
        return Ok((s, ch));
    }
    let leader = conn.client_for([s.leader_addr.clone()])?;
    let ch = leader
        .channel(0)
        .ok_or_else(|| CliError::new(2, "no channel to the leader"))?;
    Ok((s, ch))
}

fn print_members(members: &[pb::Member]) {
    for m in members {
        let peer = if m.peer_addr.is_empty() {
            String::new()
        } else {
            format!("  peers at {}", m.peer_addr)
        };
        let role = if m.voter { "voter" } else { "learner" };
        println!("{:>4}  {:<24} {role}{peer}", m.id, m.addr);
    }
}

pub async fn run(conn: &Conn, cmd: MemberCmd) -> Result<(), CliError> {
    let (status, ch) = leader(conn).await?;
    let mut admin = AdminClient::new(ch);
    let voters: BTreeSet<u64> = status.members.iter().filter(|m| m.voter).map(|m| m.id).collect();
    let resp = match cmd {
        MemberCmd::List { json } => {
            if json {
                super::json::print(&super::json::members(&status.members));
            } else {
                print_members(&status.members);
            }
            return Ok(());
        }
        MemberCmd::TransferLeader { id } => {
            let from = if status.leader_id != 0 {
                status.leader_id
            } else {
                status.node_id
            };
            return transfer_leader(&mut admin, from, id).await;
        }
        MemberCmd::Add { id, addr, no_wait } => {
            let member = crate::config::parse_member(&addr).map_err(|e| CliError::new(2, e))?;
            admin
                .add_learner(pb::AddLearnerRequest {
                    id,
                    addr: member.addr,
                    peer_addr: member.peer_addr,
                    blocking: !no_wait,
                })
                .await
        }
        MemberCmd::Promote { id } => {
            let mut v = voters;
            v.insert(id);
            admin
                .change_membership(pb::ChangeMembershipRequest {
                    voters: v.into_iter().collect(),
                    retain: false,
                })
                .await
        }
        MemberCmd::Remove { id } => {
            let mut v = voters;
            let was_voter = v.remove(&id);
            if !was_voter && !status.members.iter().any(|m| m.id == id) {
                return Err(CliError::new(1, format!("node {id} is not a member")));
            }
            admin
                .change_membership(pb::ChangeMembershipRequest {
                    voters: v.into_iter().collect(),
                    retain: false,
                })
                .await
        }
    };
    let resp = resp
        .map_err(|s| CliError::new(2, s.message().to_string()))?
        .into_inner();
    print_members(&resp.members);
    Ok(())
}

async fn transfer_leader(admin: &mut AdminClient<Channel>, from: u64, to: Option<u64>) -> Result<(), CliError> {
    let t = admin
        .transfer_leader(pb::TransferLeaderRequest { to: to.unwrap_or(0) })
        .await
        .map_err(|s| CliError::new(2, s.message().to_string()))?
        .into_inner();
    println!(
        "node {} leads now (term {}), was node {from}; the election took {} ms",
        t.leader_id, t.term, t.took_ms
    );
    Ok(())
}
