//! The Handles service (handles.proto).

use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use ipb::command::Op;
use tonic::{Request, Response, Status};

use super::{Api, Credentials, Need, blocking, point_read, validate};

use pb::Access;

pub struct HandlesService {
    api: Arc<Api>,
}

impl HandlesService {
    pub fn new(api: Arc<Api>) -> Self {
        Self { api }
    }

    pub fn api(&self) -> &Api {
        &self.api
    }
}

/// The calls, as one caller makes them (the Writes and Reads services call
/// these for each write or read they carry).
impl HandlesService {
    pub async fn mint_as(&self, creds: &Credentials, r: pb::MintRequest) -> Result<pb::MintResponse, Status> {
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        let id = if r.id.is_empty() {
            handlestore_proto::id::new_handle_id("")
        } else {
            r.id
        };
        validate::handle_id(&id)?;
        validate::value(&r.value, l)?;
        let ttl_ms = validate::ttl(r.ttl.as_ref(), l)?;
        let need = Need::store(&namespace, Access::Write, &r.store);
        let op = Op::HandleWrite(ipb::HandleWrite {
            namespace: namespace.clone(),
            store: r.store.clone(),
            id: id.clone(),
            value: r.value,
            mode: ipb::WriteMode::Create as i32,
            ttl_ms,
            keep_ttl: false,
            expected_revision: None,
        });
        let res = self.api.apply_as(creds, need, r.write_id, op).await?;
        // A retried mint answers with the id of the first attempt.
        let id = if res.id.is_empty() { id } else { res.id };
        Ok(pb::MintResponse {
            id,
            revision: res.revision,
            expires_at_ms: res.expires_at_ms,
        })
    }

    pub async fn put_as(&self, creds: &Credentials, r: pb::PutRequest) -> Result<pb::PutResponse, Status> {
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        validate::handle_id(&r.id)?;
        validate::value(&r.value, l)?;
        let ttl_ms = validate::ttl(r.ttl.as_ref(), l)?;
        let need = Need::store(&namespace, Access::Write, &r.store);
        let op = Op::HandleWrite(ipb::HandleWrite {
            namespace: namespace.clone(),
            store: r.store.clone(),
            id: r.id,
            value: r.value,
            mode: ipb::WriteMode::Upsert as i32,
            ttl_ms,
            keep_ttl: r.ttl.as_ref().is_some_and(|t| t.keep),
            expected_revision: r.expected_revision,
        });
        let res = self.api.apply_as(creds, need, r.write_id, op).await?;
        Ok(pb::PutResponse {
            existed: res.existed,
            revision: res.revision,
            expires_at_ms: res.expires_at_ms,
        })
    }

    pub async fn delete_as(&self, creds: &Credentials, r: pb::DeleteRequest) -> Result<pb::DeleteResponse, Status> {
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        validate::handle_id(&r.id)?;
        let need = Need::store(&namespace, Access::Write, &r.store);
        let op = Op::HandleDelete(ipb::HandleDelete {
            namespace: namespace.clone(),
            store: r.store.clone(),
            id: r.id,
            expected_revision: r.expected_revision,
        });
        let res = self.api.apply_as(creds, need, r.write_id, op).await?;
        Ok(pb::DeleteResponse {
            existed: res.existed,
            revision: res.revision,
        })
    }

    pub async fn get_as(&self, creds: &Credentials, r: pb::GetRequest) -> Result<pb::GetResponse, Status> {
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        validate::handle_id(&r.id)?;
        let need = Need::store(&namespace, Access::Read, &r.store);
        let (at, d) = self.api.read_as(creds, &need, r.read.as_ref()).await?;
        let rec = point_read(|| self.api.state.get_handle(&namespace, &r.store, &r.id, &at.time))?;
        // In an owner-bound store another user's handle is not there.
        let bound = d.view().owner_bound(&namespace, &r.store);
        let rec = rec.filter(|rec| !bound || d.sees_owner(&need, &rec.owner));
        let Some(rec) = rec else {
            return Err(Reason::NotFound.status(format!("unknown handle {}", r.id)));
        };
        Ok(pb::GetResponse {
            value: rec.value,
            create_revision: rec.create_revision,
            mod_revision: rec.mod_revision,
            expires_at_ms: rec.expires_at_ms,
            read_revision: at.revision,
        })
    }
}

#[tonic::async_trait]
impl pb::handles_server::Handles for HandlesService {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn mint(&self, request: Request<pb::MintRequest>) -> Result<Response<pb::MintResponse>, Status> {
        let creds = Credentials::of(&request);
        self.mint_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn put(&self, request: Request<pb::PutRequest>) -> Result<Response<pb::PutResponse>, Status> {
        let creds = Credentials::of(&request);
        self.put_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete(&self, request: Request<pb::DeleteRequest>) -> Result<Response<pb::DeleteResponse>, Status> {
        let creds = Credentials::of(&request);
        self.delete_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn get(&self, request: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        let creds = Credentials::of(&request);
        self.get_as(&creds, request.into_inner()).await.map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn list(&self, request: Request<pb::HandleListRequest>) -> Result<Response<pb::HandleListResponse>, Status> {
        let creds = Credentials::of(&request);
        super::handles_admin::list(&self.api, &creds, request.into_inner())
            .await
            .map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn evict(&self, request: Request<pb::EvictRequest>) -> Result<Response<pb::EvictResponse>, Status> {
        let creds = Credentials::of(&request);
        super::handles_admin::evict(&self.api, &creds, request.into_inner())
            .await
            .map(Response::new)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn len(&self, request: Request<pb::LenRequest>) -> Result<Response<pb::LenResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        let need = Need::store(&namespace, Access::Read, &r.store);
        let (at, d) = self.api.read_as(&creds, &need, r.read.as_ref()).await?;
        if d.view().owner_bound(&namespace, &r.store) && !d.sees_all_owners(&need) {
            return Err(Reason::PermissionDenied.status(format!(
                "store {} is owner-bound: counting it needs admin access to the store",
                r.store
            )));
        }
        let (state, time) = (self.api.state.clone(), at.time);
        let len = blocking(move || state.len(&namespace, &r.store, &time)).await?;
        Ok(Response::new(pb::LenResponse {
            len,
            read_revision: at.revision,
        }))
    }
}
