//! `handlestore member`: list, add (as learner), promote, remove, hand
//! leadership to another voter, and shrink to N members (`shrink`).

use std::collections::BTreeSet;

use handlestore_client::NodeChannel as Channel;
use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use super::leader::leader;
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
    /// Remove every member whose id is above N, highest first, one at a
    /// time (a StatefulSet scaled in to N replicas); nothing when none is.
    Shrink {
        /// How many members stay: ids 1..=N.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        to: u64,
    },
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
        MemberCmd::Shrink { to } => return super::shrink::run(conn, to).await,
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
