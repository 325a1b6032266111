//! The error table: every error a node answers is a gRPC status whose
//! `ErrorDetail.reason` is a [`Reason`], and the reason fixes the status's
//! code. The table itself is `proto/reasons.txt` (read by `build.rs`); the
//! statuses are made here and nowhere else, so no call site can pair a
//! reason with the wrong code. How the detail travels in the status is
//! [`crate::status_details`].

use tonic::Status;

use crate::meta::LEADER_HEADER;
use crate::status_details;
use crate::v1 as pb;

include!(concat!(env!("OUT_DIR"), "/reasons.rs"));

/// Whether the clients try again on their own (the table's "retried").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The call is retried, on another node or after a backoff, until its
    /// deadline (a write with the same write id).
    Yes,
    /// The caller gets the error at once.
    No,
    /// A watch resumes from the last revision it delivered.
    Resume,
}

impl Reason {
    /// The reason named `name`, if this build knows it (a newer node may
    /// send one it does not).
    pub fn from_name(name: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The reason a node gave for `status`, if it gave one this build knows.
    pub fn of(status: &Status) -> Option<Reason> {
        Reason::from_name(&detail(status).reason)
    }

    /// The status for this reason, with `message` for people.
    pub fn status(self, message: impl Into<String>) -> Status {
        self.status_with(message, pb::ErrorDetail::default())
    }

    /// The status for this reason, with more detail (a leader, a revision);
    /// the detail's reason is set to this one, and it travels in the
    /// status's details as a `google.rpc.Status` does
    /// ([`status_details::encode`]). A leader's address in the detail is
    /// also sent as the `x-handlestore-leader` metadata.
    pub fn status_with(self, message: impl Into<String>, mut detail: pb::ErrorDetail) -> Status {
        detail.reason = self.name().into();
        let leader = (!detail.leader_addr.is_empty())
            .then(|| detail.leader_addr.parse().ok())
            .flatten();
        let message = message.into();
        let details = status_details::encode(self.code(), &message, &detail);
        let mut status = Status::with_details(self.code(), message, details.into());
        if let Some(addr) = leader {
            status.metadata_mut().insert(LEADER_HEADER, addr);
        }
        status
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a node said about an error, decoded from the status details in
/// either form [`status_details::decode`] reads (empty when it said nothing,
/// or the status came from something else).
pub fn detail(status: &Status) -> pb::ErrorDetail {
    status_details::decode(status.details()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_one_row_and_names_itself() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len(), "a reason is listed twice");
        for r in Reason::ALL {
            assert_eq!(Reason::from_name(r.name()), Some(r));
            let s = r.status("why");
            assert_eq!((s.code(), Reason::of(&s)), (r.code(), Some(r)));
        }
        assert_eq!(Reason::from_name("no_such_reason"), None);
    }

    #[test]
    fn only_unavailable_and_deadline_reasons_are_retried() {
        // A node that gave up on a request before reading it whole
        // (DEADLINE_EXCEEDED) changed nothing: retrying it is as safe as
        // retrying an unavailable node.
        for r in Reason::ALL {
            let retried = r.retry() == Retry::Yes;
            let code = r.code();
            assert_eq!(
                retried,
                code == tonic::Code::Unavailable || code == tonic::Code::DeadlineExceeded,
                "{r}"
            );
        }
    }

    /// docs/consistency.md's error table lists every reason, each with its
    /// code and what the clients do, and nothing else.
    #[test]
    fn the_docs_error_table_is_this_table() {
        let doc = include_str!("../../docs/consistency.md");
        let section = doc.split("\n## Errors\n").nth(1).expect("an Errors section");
        let section = section.split("\n## ").next().unwrap_or(section);
        let documented: Vec<(String, String, String)> = section
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(|c| c.trim().trim_matches('`')).collect();
                (cells[1].to_string(), cells[2].to_string(), cells[3].to_string())
            })
            .collect();
        let table: Vec<(String, String, String)> = Reason::ALL
            .iter()
            .map(|r| {
                let retried = match r.retry() {
                    Retry::Yes => "yes",
                    Retry::No => "no",
                    Retry::Resume => "resume",
                };
                (r.name().into(), r.code_name().into(), retried.into())
            })
            .collect();
        assert_eq!(
            documented, table,
            "docs/consistency.md's error table differs from proto/reasons.txt"
        );
    }

    #[test]
    fn a_leader_in_the_detail_is_also_metadata() {
        let hint = pb::ErrorDetail {
            leader_id: 2,
            leader_addr: "10.0.0.2:7001".into(),
            ..Default::default()
        };
        let s = Reason::NotLeader.status_with("not the leader", hint);
        assert_eq!(s.metadata().get(LEADER_HEADER).unwrap(), "10.0.0.2:7001");
        assert_eq!(detail(&s).leader_id, 2);
        let plain = Reason::NotLeader.status("no leader known");
        assert!(plain.metadata().get(LEADER_HEADER).is_none());
    }
}
