//! The Handles service (handles.proto).

use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason;
use handlestore_proto::v1 as pb;
use ipb::command::Op;
use tonic::{Request, Response, Status};

use super::{Api, blocking, point_read, validate};
use crate::status;

pub struct HandlesService {
    api: Arc<Api>,
}

impl HandlesService {
    pub fn new(api: Arc<Api>) -> Self {
        Self { api }
    }
}

#[tonic::async_trait]
impl pb::handles_server::Handles for HandlesService {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn mint(&self, request: Request<pb::MintRequest>) -> Result<Response<pb::MintResponse>, Status> {
        let r = request.into_inner();
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
        let op = Op::HandleWrite(ipb::HandleWrite {
            namespace,
            store: r.store,
            id: id.clone(),
            value: r.value,
            mode: ipb::WriteMode::Create as i32,
            ttl_ms,
            keep_ttl: false,
            expected_revision: None,
        });
        let res = self.api.apply(r.write_id, op).await?;
        // A retried mint answers with the id of the first attempt.
        let id = if res.id.is_empty() { id } else { res.id };
        Ok(Response::new(pb::MintResponse {
            id,
            revision: res.revision,
            expires_at_ms: res.expires_at_ms,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn put(&self, request: Request<pb::PutRequest>) -> Result<Response<pb::PutResponse>, Status> {
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        validate::handle_id(&r.id)?;
        validate::value(&r.value, l)?;
        let ttl_ms = validate::ttl(r.ttl.as_ref(), l)?;
        let op = Op::HandleWrite(ipb::HandleWrite {
            namespace,
            store: r.store,
            id: r.id,
            value: r.value,
            mode: ipb::WriteMode::Upsert as i32,
            ttl_ms,
            keep_ttl: r.ttl.as_ref().is_some_and(|t| t.keep),
            expected_revision: r.expected_revision,
        });
        let res = self.api.apply(r.write_id, op).await?;
        Ok(Response::new(pb::PutResponse {
            existed: res.existed,
            revision: res.revision,
            expires_at_ms: res.expires_at_ms,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn get(&self, request: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        validate::handle_id(&r.id)?;
        let at = self.api.reads.ready(r.read.as_ref()).await?;
        let rec = point_read(|| self.api.state.get_handle(&namespace, &r.store, &r.id, &at.time))?;
        let Some(rec) = rec else {
            return Err(status::status(
                tonic::Code::NotFound,
                reason::NOT_FOUND,
                format!("unknown handle {}", r.id),
            ));
        };
        Ok(Response::new(pb::GetResponse {
            value: rec.value,
            create_revision: rec.create_revision,
            mod_revision: rec.mod_revision,
            expires_at_ms: rec.expires_at_ms,
            read_revision: at.revision,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn delete(&self, request: Request<pb::DeleteRequest>) -> Result<Response<pb::DeleteResponse>, Status> {
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        validate::handle_id(&r.id)?;
        let op = Op::HandleDelete(ipb::HandleDelete {
            namespace,
            store: r.store,
            id: r.id,
            expected_revision: r.expected_revision,
        });
        let res = self.api.apply(r.write_id, op).await?;
        Ok(Response::new(pb::DeleteResponse {
            existed: res.existed,
            revision: res.revision,
        }))
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn len(&self, request: Request<pb::LenRequest>) -> Result<Response<pb::LenResponse>, Status> {
        let r = request.into_inner();
        let l = &self.api.limits;
        let namespace = validate::namespace(&r.namespace, l)?;
        validate::store(&r.store, l)?;
        let at = self.api.reads.ready(r.read.as_ref()).await?;
        let (state, time) = (self.api.state.clone(), at.time);
        let len = blocking(move || state.len(&namespace, &r.store, &time)).await?;
        Ok(Response::new(pb::LenResponse {
            len,
            read_revision: at.revision,
        }))
    }
}
