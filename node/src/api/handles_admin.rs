//! Admin over what a handle store holds (`Handles.List`, `Handles.Evict`):
//! what an operator asks of a store, never a tool's own path. Both need
//! admin access to the store.
//!
//! Evicting goes through the log as the tools' own writes do: by id and by
//! prefix as deletes (one per handle, each counted once), every expired one
//! as the sweep's own `Expire` command, which re-checks each handle's
//! expiry against the leader's clock when it applies.

use futures::StreamExt;
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::limits::{DEFAULT_PREFIX_DELETE, MAX_PAGE_BYTES, MAX_PREFIX_DELETE};
use handlestore_proto::v1 as pb;
use ipb::command::Op;
use pb::Access;
use pb::evict_request::What;
use tonic::Status;

use super::{Api, Credentials, Need, blocking, validate};
use crate::state::{Held, ListPage, ListQuery, keys};
use crate::status::invalid;

/// Deletes in flight at once while evicting by prefix.
const EVICTING_AT_ONCE: usize = 32;

/// One page of a store's handles.
pub async fn list(api: &Api, creds: &Credentials, r: pb::HandleListRequest) -> Result<pb::HandleListResponse, Status> {
    let l = &api.limits;
    let namespace = validate::namespace(&r.namespace, l)?;
    validate::store(&r.store, l)?;
    if !r.prefix.is_empty() {
        validate::handle_id_prefix(&r.prefix)?;
    }
    let (limit, after) = validate::page(r.limit, &r.page_token, "handles")?;
    let need = Need::store(&namespace, Access::Admin, &r.store);
    let (at, _) = api.read_as(creds, &need, r.read.as_ref()).await?;
    let (state, time, with_values) = (api.state.clone(), at.time, r.with_values);
    let page = blocking(move || {
        let q = ListQuery {
            prefix: &r.prefix,
            after: after.as_deref(),
            limit,
            with_values,
            max_bytes: MAX_PAGE_BYTES,
            held: Held::Live,
        };
        state.list_handles(&namespace, &r.store, &q, &time)
    })
    .await?;
    let next_page_token = validate::next_page(page.more, page.entries.last().map(|(id, _)| id.as_str()));
    let handles = page
        .entries
        .into_iter()
        .map(|(id, rec)| pb::HandleInfo {
            id,
            create_revision: rec.create_revision,
            mod_revision: rec.mod_revision,
            expires_at_ms: rec.expires_at_ms,
            size: rec.value.len() as u64,
            value: if with_values { rec.value } else { Vec::new() },
            owner: rec.owner,
        })
        .collect();
    Ok(pb::HandleListResponse {
        handles,
        next_page_token,
        read_revision: at.revision,
    })
}

/// Evicts what `r` names, up to its limit.
pub async fn evict(api: &Api, creds: &Credentials, r: pb::EvictRequest) -> Result<pb::EvictResponse, Status> {
    let l = &api.limits;
    let namespace = validate::namespace(&r.namespace, l)?;
    validate::store(&r.store, l)?;
    if r.limit > MAX_PREFIX_DELETE {
        return Err(invalid(format!(
            "limit {} exceeds {MAX_PREFIX_DELETE} handles per call",
            r.limit
        )));
    }
    let limit = if r.limit == 0 { DEFAULT_PREFIX_DELETE } else { r.limit } as usize;
    let store = r.store.as_str();
    match r.what {
        Some(What::Id(id)) => {
            validate::handle_id(&id)?;
            let res = delete(api, creds, &namespace, store, id).await?;
            Ok(pb::EvictResponse {
                evicted: u64::from(res.existed),
                more: false,
                revision: res.revision,
            })
        }
        Some(What::Prefix(prefix)) if !prefix.is_empty() => {
            validate::handle_id_prefix(&prefix)?;
            evict_prefix(api, creds, &namespace, store, &prefix, limit).await
        }
        Some(What::Expired(true)) => evict_expired(api, creds, &namespace, store, limit).await,
        _ => Err(invalid(
            "say what to evict: an id, a prefix that is not empty, or the expired handles",
        )),
    }
}

/// Deletes one handle, whoever owns it.
async fn delete(
    api: &Api,
    creds: &Credentials,
    namespace: &str,
    store: &str,
    id: String,
) -> Result<ipb::CommandResult, Status> {
    let need = Need::store(namespace, Access::Admin, store);
    let op = Op::HandleDelete(ipb::HandleDelete {
        namespace: namespace.to_string(),
        store: store.to_string(),
        id,
        expected_revision: None,
    });
    api.apply_as(creds, need, None, op).await
}

/// The handles of `store` named `prefix...` held as `held`, up to `limit`,
/// as of a linearizable read.
async fn matching(
    api: &Api,
    creds: &Credentials,
    namespace: &str,
    store: &str,
    prefix: &str,
    limit: usize,
    held: Held,
) -> Result<ListPage, Status> {
    let need = Need::store(namespace, Access::Admin, store);
    let (at, _) = api.read_as(creds, &need, None).await?;
    let (state, ns, store, prefix) = (
        api.state.clone(),
        namespace.to_string(),
        store.to_string(),
        prefix.to_string(),
    );
    blocking(move || {
        let q = ListQuery {
            prefix: &prefix,
            after: None,
            limit,
            with_values: false,
            max_bytes: usize::MAX,
            held,
        };
        state.list_handles(&ns, &store, &q, &at.time)
    })
    .await
}

async fn evict_prefix(
    api: &Api,
    creds: &Credentials,
    namespace: &str,
    store: &str,
    prefix: &str,
    limit: usize,
) -> Result<pb::EvictResponse, Status> {
    let page = matching(api, creds, namespace, store, prefix, limit, Held::Any).await?;
    let mut deletes = futures::stream::iter(page.entries)
        .map(|(id, _)| delete(api, creds, namespace, store, id))
        .buffer_unordered(EVICTING_AT_ONCE);
    let (mut evicted, mut revision) = (0u64, 0u64);
    while let Some(res) = deletes.next().await {
        let res = res?;
        evicted += u64::from(res.existed);
        revision = revision.max(res.revision);
    }
    Ok(pb::EvictResponse {
        evicted,
        more: page.more,
        revision,
    })
}

async fn evict_expired(
    api: &Api,
    creds: &Credentials,
    namespace: &str,
    store: &str,
    limit: usize,
) -> Result<pb::EvictResponse, Status> {
    let page = matching(api, creds, namespace, store, "", limit, Held::Expired).await?;
    if page.entries.is_empty() {
        return Ok(pb::EvictResponse::default());
    }
    let items = page
        .entries
        .iter()
        .map(|(id, rec)| ipb::ExpireItem {
            key: keys::handle_key(namespace, store, id),
            expires_at_ms: rec.expires_at_ms,
        })
        .collect();
    let op = Op::Expire(ipb::Expire {
        items,
        dedup_before_ms: 0,
    });
    let need = Need::store(namespace, Access::Admin, store);
    let res = api.apply_as(creds, need, None, op).await?;
    Ok(pb::EvictResponse {
        evicted: res.count,
        more: page.more,
        revision: res.revision,
    })
}
