//! The HandleStore contract suite, on the in-memory store and on a real
//! three-node cluster: both implementations must behave the same.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use handlestore_client::testkit::{Doc, StoreFactory, StoreSpec, run_all};
use handlestore_client::{Client, HandleStore, MemoryHandleStore, MemoryOptions, Ttl};
use handlestore_tests::TestCluster;

struct Memory;

#[async_trait]
impl StoreFactory for Memory {
    async fn make(&self, spec: StoreSpec) -> Arc<dyn HandleStore<Doc>> {
        Arc::new(MemoryHandleStore::with_options(MemoryOptions {
            default_ttl: spec.default_ttl,
            prefix: spec.prefix,
            gc_interval: Some(Duration::from_millis(50)),
        }))
    }
}

struct Cluster(Client);

#[async_trait]
impl StoreFactory for Cluster {
    async fn make(&self, spec: StoreSpec) -> Arc<dyn HandleStore<Doc>> {
        let mut b = self.0.handle_store::<Doc>(&spec.name).prefix(spec.prefix);
        if let Some(d) = spec.default_ttl {
            b = b.default_ttl(d);
        }
        Arc::new(b.build())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_on_memory_store() {
    run_all(&Memory, "mem").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn contract_on_three_node_cluster() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    run_all(&Cluster(cluster.client()), "cluster").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_gc_frees_expired_entries() {
    let s = MemoryHandleStore::<Doc>::with_options(MemoryOptions {
        gc_interval: Some(Duration::from_millis(20)),
        ..Default::default()
    });
    for _ in 0..10 {
        s.mint(Doc::default(), Ttl::After(Duration::from_millis(50)))
            .await
            .expect("mint");
    }
    s.mint(Doc::default(), Ttl::Never).await.expect("mint");
    assert_eq!(s.raw_len(), 11);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.raw_len(), 1, "the GC removed the expired entries");
}
