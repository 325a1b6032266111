//! The Redis store of `cart_server --redis` (the row handlestore's cart
//! flow is compared with) keeps the same `HandleStore` contract as
//! handlestore's own stores: the comparison is with a correct Redis-backed
//! server, not with one that loses concurrent adds or reuses ids.

#[path = "../../../client/rust/examples/cart_server/redis_store.rs"]
mod redis_store;

use std::sync::Arc;

use async_trait::async_trait;
use handlestore_bench::systems::{self, Redis, RedisMode};
use handlestore_client::HandleStore;
use handlestore_client::testkit::{self, Doc, StoreFactory, StoreSpec};
use redis_store::RedisHandleStore;

struct InRedis {
    url: String,
}

#[async_trait]
impl StoreFactory for InRedis {
    async fn make(&self, spec: StoreSpec) -> Arc<dyn HandleStore<Doc>> {
        let store = RedisHandleStore::new(&self.url, &spec.name, &spec.prefix, spec.default_ttl).expect("store");
        Arc::new(store)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_redis_store_of_cart_server_keeps_the_handle_store_contract() {
    systems::ensure_installed().expect("redis-server installed");
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = Redis::start(dir.path(), RedisMode::FsyncAlways).await.expect("redis");
    testkit::run_all(&InRedis { url: redis.url.clone() }, "redis").await;
}
