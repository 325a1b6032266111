//! Namespace policy as applying enforces it: usage (entries and bytes of
//! handles and state keys, per namespace) kept up to date by every write,
//! delete and expiry; quotas checked before a write grows a namespace; and
//! owner-bound handle stores, where a handle belongs to the user that
//! minted it.

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;

use super::{Tx, fail};
use crate::state::{Record, Result, Usage, keys};
use crate::storage::db::{self, CF_SM_META};

/// Who a command was authorized for.
#[derive(Debug, Clone, Default)]
pub(super) struct Caller {
    pub subject: String,
    pub all_owners: bool,
}

impl Caller {
    pub fn of(cmd: &ipb::Command) -> Self {
        Caller {
            subject: cmd.subject.clone(),
            // Internal commands (no auth revision) act for the cluster.
            all_owners: cmd.all_owners || cmd.auth_revision.is_none(),
        }
    }
}

impl Tx<'_> {
    fn policy(&self, ns: &str) -> Option<&pb::NamespacePolicy> {
        self.auth.current().namespaces.iter().find(|p| p.name == ns)
    }

    /// Whether handles of `store` in `ns` belong to their minter.
    pub(super) fn owner_bound(&self, ns: &str, store: &str) -> bool {
        self.policy(ns)
            .is_some_and(|p| p.owner_bound_stores.iter().any(|s| s == store))
    }

    /// A namespace's usage as stored before this batch.
    fn stored_usage(&self, ns: &str) -> Result<Usage> {
        Ok(self
            .db
            .get_pinned_cf(db::cf(self.db, CF_SM_META), keys::usage_key(ns))?
            .and_then(|raw| Usage::decode(&raw))
            .unwrap_or_default())
    }

    /// A namespace's usage as this batch sees it.
    fn usage(&self, ns: &str) -> Result<Usage> {
        let mut u = self.stored_usage(ns)?;
        if let Some(d) = self.usage.get(ns) {
            u.add(*d);
        }
        Ok(u)
    }

    /// The refusal of a write that would take `ns` over its quota by
    /// growing it by `grow`.
    pub(super) fn over_quota(&mut self, ns: &str, grow: Usage) -> Result<Option<ipb::CommandResult>> {
        let Some(p) = self.policy(ns).cloned() else {
            return Ok(None);
        };
        if p.max_entries == 0 && p.max_bytes == 0 {
            return Ok(None);
        }
        let now = self.usage(ns)?;
        let (entries, bytes) = (now.entries + grow.entries, now.bytes + grow.bytes);
        let refused = if grow.entries > 0 && p.max_entries > 0 && entries > p.max_entries as i64 {
            Some(format!("{} of {} entries", now.entries, p.max_entries))
        } else if grow.bytes > 0 && p.max_bytes > 0 && bytes > p.max_bytes as i64 {
            Some(format!("{} of {} bytes", now.bytes, p.max_bytes))
        } else {
            None
        };
        Ok(refused.map(|held| {
            fail(
                ipb::ResultCode::ResultQuota,
                format!("namespace {ns} is at its quota ({held} in use); nothing was written"),
            )
        }))
    }

    /// Counts a record stored (`new`) in place of `old` in its namespace.
    pub(super) fn track_usage(&mut self, key: &[u8], new: Option<&Record>, old: Option<&Record>) {
        let Some(ns) = keys::namespace_of(key) else { return };
        let mut d = Usage::default();
        if let Some(n) = new {
            d.add(Usage::of(key, n));
        }
        if let Some(o) = old {
            let o = Usage::of(key, o);
            d.add(Usage {
                entries: -o.entries,
                bytes: -o.bytes,
            });
        }
        self.usage.entry(ns.to_string()).or_default().add(d);
    }

    /// Writes the batch's usage changes.
    pub(super) fn commit_usage(&mut self) -> Result<()> {
        let meta_cf = db::cf(self.db, CF_SM_META);
        for (ns, d) in std::mem::take(&mut self.usage) {
            if d == Usage::default() {
                continue;
            }
            let key = keys::usage_key(&ns);
            let mut u = self.stored_usage(&ns)?;
            u.add(d);
            if u.entries <= 0 && u.bytes <= 0 {
                self.wb.delete_cf(meta_cf, key);
            } else {
                self.wb.put_cf(meta_cf, key, u.encode());
            }
        }
        Ok(())
    }
}
