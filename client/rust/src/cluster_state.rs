//! `ClusterStateTool`: the StateTool over a handlestore cluster.

use std::time::Duration;

use async_trait::async_trait;
use handlestore_proto::v1 as pb;
use pb::write::Op;

use crate::cluster::{Client, Consistency};
use crate::error::{Error, Result};
use crate::failover::rpc;
use crate::reads::read_answer;
use crate::state_tool::*;
use crate::stubs::state;
use crate::ttl::Ttl;
use crate::writes::answer;

impl Client {
    /// The state tool in this client's namespace.
    pub fn state_tool(&self) -> ClusterStateTool {
        ClusterStateTool::new(self.clone())
    }
}

/// A replicated [`StateTool`] in the client's namespace.
#[derive(Clone)]
pub struct ClusterStateTool {
    client: Client,
    default_ttl: Option<Duration>,
    consistency: Consistency,
}

impl ClusterStateTool {
    fn new(client: Client) -> Self {
        Self {
            client,
            default_ttl: None,
            consistency: Consistency::Linearizable,
        }
    }

    /// TTL used for `Ttl::Default` (none: never expires).
    pub fn with_default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = Some(ttl).filter(|d| !d.is_zero());
        self
    }

    /// Consistency of reads (default linearizable).
    pub fn with_consistency(mut self, c: Consistency) -> Self {
        self.consistency = c;
        self
    }

    fn ns(&self) -> String {
        self.client.namespace().to_string()
    }

    fn ttl(&self, ttl: Ttl) -> pb::Ttl {
        pb::Ttl {
            ttl_ms: ttl.to_millis(),
            default_ttl_ms: self.default_ttl.map(|d| d.as_millis() as u64).unwrap_or(0),
            keep: false,
        }
    }

    fn read(&self) -> Option<pb::ReadOptions> {
        Some(self.consistency.to_pb())
    }
}

fn check_key(key: &str) -> Result<()> {
    crate::key::validate_key(key, crate::key::MAX_KEY_LEN).map_err(Error::InvalidArgument)
}

pub(crate) fn value_to_pb(v: StateValue) -> Result<pb::StateValue> {
    let kind = match v {
        StateValue::Json(j) => pb::state_value::Kind::Json(serde_json::to_string(&j)?),
        StateValue::Bytes(b) => pb::state_value::Kind::Bytes(b),
    };
    Ok(pb::StateValue { kind: Some(kind) })
}

pub(crate) fn value_from_pb(v: pb::StateValue) -> Result<Option<StateValue>> {
    Ok(match v.kind {
        Some(pb::state_value::Kind::Json(s)) => Some(StateValue::Json(serde_json::from_str(&s)?)),
        Some(pb::state_value::Kind::Bytes(b)) => Some(StateValue::Bytes(b)),
        None => None,
    })
}

fn entry_from_pb(e: pb::StateEntry) -> Result<StateEntry> {
    Ok(StateEntry {
        value: match e.value {
            Some(v) => value_from_pb(v)?,
            None => None,
        },
        key: e.key,
        create_revision: e.create_revision,
        mod_revision: e.mod_revision,
        expires_at_ms: Some(e.expires_at_ms).filter(|x| *x != 0),
    })
}

#[async_trait]
impl StateTool for ClusterStateTool {
    async fn store(&self, key: &str, value: StateValue, opts: StoreOptions) -> Result<u64> {
        check_key(key)?;
        let ticket = self.client.write_ticket();
        let msg = pb::StoreRequest {
            namespace: self.ns(),
            key: key.to_string(),
            value: Some(value_to_pb(value)?),
            ttl: Some(self.ttl(opts.ttl)),
            expected_revision: opts.expected_revision,
            write_id: Some(ticket.id),
        };
        let resp = answer!(self.client.write(Op::Store(msg), ticket).await, Store);
        Ok(resp.revision)
    }

    async fn retrieve(&self, key: &str) -> Result<Option<StateEntry>> {
        check_key(key)?;
        let msg = pb::RetrieveRequest {
            namespace: self.ns(),
            key: key.to_string(),
            read: self.read(),
        };
        let resp = read_answer!(self.client.read(pb::read::Op::Retrieve(msg)).await, Retrieve);
        match resp {
            Ok(r) => r.entry.map(entry_from_pb).transpose(),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn delete(&self, key: &str, opts: DeleteOptions) -> Result<Deleted> {
        if opts.prefix {
            crate::key::validate_prefix(key, crate::key::MAX_KEY_LEN).map_err(Error::InvalidArgument)?;
        } else {
            check_key(key)?;
        }
        let ticket = self.client.write_ticket();
        let msg = pb::StateDeleteRequest {
            namespace: self.ns(),
            key: key.to_string(),
            prefix: opts.prefix,
            limit: opts.limit,
            expected_revision: opts.expected_revision,
            write_id: Some(ticket.id),
        };
        let resp = answer!(self.client.write(Op::StateDelete(msg), ticket).await, StateDelete);
        Ok(Deleted {
            count: resp.deleted,
            more: resp.more,
        })
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        crate::key::validate_prefix(prefix, crate::key::MAX_KEY_LEN).map_err(Error::InvalidArgument)?;
        let msg = pb::ListRequest {
            namespace: self.ns(),
            prefix: prefix.to_string(),
            limit: opts.limit,
            page_token: opts.page_token.unwrap_or_default(),
            with_values: opts.with_values,
            read: self.read(),
        };
        let resp = rpc!(self.client, state, list, msg)?;
        Ok(ListPage {
            entries: resp.entries.into_iter().map(entry_from_pb).collect::<Result<_>>()?,
            next_page_token: Some(resp.next_page_token).filter(|t| !t.is_empty()),
        })
    }

    async fn exists(&self, key: &str) -> Result<bool> {
        check_key(key)?;
        let msg = pb::ExistsRequest {
            namespace: self.ns(),
            key: key.to_string(),
            read: self.read(),
        };
        let resp = rpc!(self.client, state, exists, msg)?;
        Ok(resp.exists)
    }

    async fn batch_store(&self, items: Vec<StoreItem>) -> Result<u64> {
        let mut pb_items = Vec::with_capacity(items.len());
        for item in items {
            check_key(&item.key)?;
            pb_items.push(pb::StoreItem {
                ttl: Some(self.ttl(item.ttl)),
                value: Some(value_to_pb(item.value)?),
                key: item.key,
                expected_revision: item.expected_revision,
            });
        }
        let ticket = self.client.write_ticket();
        let msg = pb::BatchStoreRequest {
            namespace: self.ns(),
            items: pb_items,
            write_id: Some(ticket.id),
        };
        let resp = answer!(self.client.write(Op::BatchStore(msg), ticket).await, BatchStore);
        Ok(resp.revision)
    }

    async fn batch_retrieve(&self, keys: &[String]) -> Result<Vec<Option<StateEntry>>> {
        for k in keys {
            check_key(k)?;
        }
        let msg = pb::BatchRetrieveRequest {
            namespace: self.ns(),
            keys: keys.to_vec(),
            read: self.read(),
        };
        let resp = rpc!(self.client, state, batch_retrieve, msg)?;
        resp.entries
            .into_iter()
            .map(|m| m.entry.map(entry_from_pb).transpose())
            .collect()
    }
}
