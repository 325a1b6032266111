//! The State service (state.proto): the state-tool interface over the
//! replicated keyspace.

use std::collections::HashSet;
use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::limits::{DEFAULT_PREFIX_DELETE, MAX_PAGE_BYTES, MAX_PREFIX_DELETE};
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use ipb::command::Op;
use tonic::{Request, Response, Status};

use super::{Api, Credentials, Decision, Need, blocking, point_read, validate};
use crate::state::{ListQuery, Record};
use crate::status::invalid;
use pb::Access;

pub struct StateService {
    api: Arc<Api>,
}

impl StateService {
    pub fn new(api: Arc<Api>) -> Self {
        Self { api }
    }
}

fn entry(key: String, rec: Record, with_value: bool) -> pb::StateEntry {
    let value = with_value.then(|| pb::StateValue {
        kind: Some(if rec.json {
            pb::state_value::Kind::Json(String::from_utf8_lossy(&rec.value).into_owned())
        } else {
            pb::state_value::Kind::Bytes(rec.value)
        }),
    });
    pb::StateEntry {
        key,
        value,
        create_revision: rec.create_revision,
        mod_revision: rec.mod_revision,
        expires_at_ms: rec.expires_at_ms,
    }
}

impl StateService {
    fn write_op(&self, namespace: &str, item: pb::StoreItem) -> Result<ipb::StateWrite, Status> {
        let l = &self.api.limits;
        validate::state_key(&item.key, l)?;
        let (value, json) = validate::state_value(item.value, l)?;
        let ttl_ms = validate::ttl(item.ttl.as_ref(), l)?;
        Ok(ipb::StateWrite {
            namespace: namespace.to_string(),
            keep_ttl: item.ttl.as_ref().is_some_and(|t| t.keep),
            key: item.key,
            value,
            json,
            ttl_ms,
            expected_revision: item.expected_revision,
        })
    }
}

/// The writes, as one caller makes them (the Writes service calls these
/// for each write it carries).
impl StateService {
    pub async fn store_as(&self, creds: &Credentials, r: pb::StoreRequest) -> Result<pb::StoreResponse, Status> {
        let namespace = validate::namespace(&r.namespace, &self.api.limits)?;
        let key = r.key.clone();
        let item = pb::StoreItem {
            key: r.key,
            value: r.value,
            ttl: r.ttl,
            expected_revision: r.expected_revision,
        };
        let op = Op::StateWrite(self.write_op(&namespace, item)?);
        let need = Need::key(&namespace, Access::Write, &key);
        let res = self.api.apply_as(creds, need, r.write_id, op).await?;
        Ok(pb::StoreResponse {
            existed: res.existed,
            revision: res.revision,
            expires_at_ms: res.expires_at_ms,
        })
    }

    pub async fn delete_as(
        &self,
        creds: &Credentials,
        r: pb::StateDeleteRequest,
    ) -> Result<pb::StateDeleteResponse, Status> {
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        let key = r.key.clone();
        let (need, op) = if r.prefix {
            validate::state_prefix(&r.key, l)?;
            if r.key.is_empty() {
                return Err(invalid("a prefix delete needs a non-empty prefix"));
            }
            if r.expected_revision.is_some() {
                return Err(invalid("expected_revision applies to single-key deletes only"));
            }
            if r.limit > MAX_PREFIX_DELETE {
                return Err(invalid(format!("limit {} exceeds {MAX_PREFIX_DELETE}", r.limit)));
            }
            let limit = if r.limit == 0 { DEFAULT_PREFIX_DELETE } else { r.limit };
            let op = Op::StateDeletePrefix(ipb::StateDeletePrefix {
                namespace: namespace.clone(),
                prefix: r.key,
                limit,
            });
            (Need::prefix(&namespace, Access::Write, &key), op)
        } else {
            validate::state_key(&r.key, l)?;
            let op = Op::StateDelete(ipb::StateDelete {
                namespace: namespace.clone(),
                key: r.key,
                expected_revision: r.expected_revision,
            });
            (Need::key(&namespace, Access::Write, &key), op)
        };
        let res = self.api.apply_as(creds, need, r.write_id, op).await?;
        Ok(pb::StateDeleteResponse {
            deleted: res.count,
            more: res.more,
            revision: res.revision,
        })
    }

    pub async fn batch_store_as(
        &self,
        creds: &Credentials,
        r: pb::BatchStoreRequest,
    ) -> Result<pb::BatchStoreResponse, Status> {
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        if r.items.is_empty() {
            return Err(invalid("a batch needs at least one item"));
        }
        if r.items.len() > l.max_batch_items {
            return Err(invalid(format!(
                "{} items; a batch holds at most {}",
                r.items.len(),
                l.max_batch_items
            )));
        }
        let mut seen = HashSet::new();
        let mut bytes = 0usize;
        let mut writes = Vec::with_capacity(r.items.len());
        for item in r.items {
            if !seen.insert(item.key.clone()) {
                return Err(invalid(format!("key {:?} appears twice in the batch", item.key)));
            }
            let w = self.write_op(&namespace, item)?;
            bytes += w.value.len();
            writes.push(w);
        }
        if bytes > l.max_batch_bytes {
            return Err(invalid(format!(
                "the batch holds {bytes} value bytes; the limit is {}",
                l.max_batch_bytes
            )));
        }
        // Every key must be writable: the batch is checked as a whole
        // (each key against the same decision), then proposed at it.
        let need = Need::namespace(&namespace, Access::Write);
        let keys: Vec<String> = writes.iter().map(|w| w.key.clone()).collect();
        let op = Op::StateBatch(ipb::StateBatch { writes });
        // A key refused here may be granted on the leader already: catch
        // up before deciding for good.
        let d = self.api.decide(creds, &Need::Authenticated).await?;
        if allowed_keys(&d, &namespace, Access::Write, &keys).is_err() {
            self.api.reads.ready(None).await?;
        }
        let res = self
            .api
            .write_authorized(creds, &Need::Authenticated, |d| {
                allowed_keys(d, &namespace, Access::Write, &keys).map_err(|_| denied_batch(d, &need))?;
                Ok((r.write_id, op.clone()))
            })
            .await?;
        Ok(pb::BatchStoreResponse { revision: res.revision })
    }

    /// A point read, as one caller makes it (the Reads service calls this
    /// for each retrieve it carries).
    pub async fn retrieve_as(
        &self,
        creds: &Credentials,
        r: pb::RetrieveRequest,
    ) -> Result<pb::RetrieveResponse, Status> {
        let namespace = validate::namespace(&r.namespace, &self.api.limits)?;
        validate::state_key(&r.key, &self.api.limits)?;
        let need = Need::key(&namespace, Access::Read, &r.key);
        let (at, _) = self.api.read_as(creds, &need, r.read.as_ref()).await?;
        let rec = point_read(|| self.api.state.get_state(&namespace, &r.key, &at.time))?;
        match rec {
            Some(rec) => Ok(pb::RetrieveResponse {
                entry: Some(entry(r.key, rec, true)),
                read_revision: at.revision,
            }),
            None => Err(Reason::NotFound.status(format!("unknown key {}", r.key))),
        }
    }
}

/// Ok if every key is allowed `access` by `d`; else the first that is not.
fn allowed_keys<'k>(d: &Decision, ns: &str, access: Access, keys: &'k [String]) -> Result<(), &'k str> {
    match keys.iter().find(|k| !d.allows(&Need::key(ns, access, k))) {
        Some(k) => Err(k),
        None => Ok(()),
    }
}

fn denied_batch(d: &Decision, need: &Need<'_>) -> Status {
    super::auth::denied(d.user().unwrap_or_default(), need)
}

#[tonic::async_trait]
impl pb::state_server::State for StateService {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn store(&self, request: Request<pb::StoreRequest>) -> Result<Response<pb::StoreResponse>, Status> {
        let creds = Credentials::of(&request);
        self.store_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete(
        &self,
        request: Request<pb::StateDeleteRequest>,
    ) -> Result<Response<pb::StateDeleteResponse>, Status> {
        let creds = Credentials::of(&request);
        self.delete_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn batch_store(
        &self,
        request: Request<pb::BatchStoreRequest>,
    ) -> Result<Response<pb::BatchStoreResponse>, Status> {
        let creds = Credentials::of(&request);
        self.batch_store_as(&creds, request.into_inner())
            .await
            .map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn retrieve(&self, request: Request<pb::RetrieveRequest>) -> Result<Response<pb::RetrieveResponse>, Status> {
        let creds = Credentials::of(&request);
        self.retrieve_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn list(&self, request: Request<pb::ListRequest>) -> Result<Response<pb::ListResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::state_prefix(&r.prefix, l)?;
        let (limit, after) = validate::page(r.limit, &r.page_token, "keys")?;
        let need = Need::prefix(&namespace, Access::Read, &r.prefix);
        let (at, d) = self.list_gate(&creds, &need, r.read.as_ref()).await?;
        let (state, time, ns) = (self.api.state.clone(), at.time, namespace.clone());
        let (prefix, with_values) = (r.prefix.clone(), r.with_values);
        let page = blocking(move || {
            let q = ListQuery {
                prefix: &prefix,
                after: after.as_deref(),
                limit,
                with_values,
                max_bytes: MAX_PAGE_BYTES,
                held: crate::state::Held::Live,
            };
            state.list_state(&ns, &q, &time)
        })
        .await?;
        // The token follows the last key read, shown or not.
        let next_page_token = validate::next_page(page.more, page.entries.last().map(|(k, _)| k.as_str()));
        let entries = page
            .entries
            .into_iter()
            .filter(|(k, _)| d.allows(&Need::key(&namespace, Access::Read, k)))
            .map(|(k, rec)| entry(k, rec, with_values))
            .collect();
        Ok(Response::new(pb::ListResponse {
            entries,
            next_page_token,
            read_revision: at.revision,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn exists(&self, request: Request<pb::ExistsRequest>) -> Result<Response<pb::ExistsResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let namespace = validate::namespace(&r.namespace, &self.api.limits)?;
        validate::state_key(&r.key, &self.api.limits)?;
        let need = Need::key(&namespace, Access::Read, &r.key);
        let (at, _) = self.api.read_as(&creds, &need, r.read.as_ref()).await?;
        let rec = point_read(|| self.api.state.get_state(&namespace, &r.key, &at.time))?;
        Ok(Response::new(pb::ExistsResponse {
            exists: rec.is_some(),
            read_revision: at.revision,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn batch_retrieve(
        &self,
        request: Request<pb::BatchRetrieveRequest>,
    ) -> Result<Response<pb::BatchRetrieveResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        if r.keys.len() > l.max_batch_items {
            return Err(invalid(format!(
                "{} keys; a batch holds at most {}",
                r.keys.len(),
                l.max_batch_items
            )));
        }
        for k in &r.keys {
            validate::state_key(k, l)?;
        }
        let need = Need::namespace(&namespace, Access::Read);
        let (at, d) = self.api.read_as(&creds, &Need::Authenticated, r.read.as_ref()).await?;
        // A batch naming a key the caller may not read is refused whole.
        allowed_keys(&d, &namespace, Access::Read, &r.keys).map_err(|_| denied_batch(&d, &need))?;
        let (state, time) = (self.api.state.clone(), at.time);
        let keys = r.keys.clone();
        let recs = blocking(move || state.get_state_many(&namespace, &keys, &time)).await?;
        let entries = r
            .keys
            .into_iter()
            .zip(recs)
            .map(|(k, rec)| pb::MaybeEntry {
                entry: rec.map(|rec| entry(k, rec, true)),
            })
            .collect();
        Ok(Response::new(pb::BatchRetrieveResponse {
            entries,
            read_revision: at.revision,
        }))
    }
}

impl StateService {
    /// A listing is allowed where some key under its prefix is readable;
    /// what the caller may not read is left out of the page.
    async fn list_gate(
        &self,
        creds: &Credentials,
        need: &Need<'_>,
        opts: Option<&pb::ReadOptions>,
    ) -> Result<(super::read::ReadAt, Decision), Status> {
        let at = self.api.reads.ready(opts).await?;
        Ok((at, self.api.guard.check_some(creds, need)?))
    }
}
