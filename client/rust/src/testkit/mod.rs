//! The HandleStore contract: one suite that every implementation must pass
//! (the in-memory store and the cluster store run it in `handlestore-tests`).
//! Each case panics with a message naming the broken rule.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{Error, HandleStore, Ttl};

/// The value type the suite stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Doc {
    pub name: String,
    pub items: Vec<u32>,
}

fn doc(name: &str) -> Doc {
    Doc {
        name: name.into(),
        items: vec![],
    }
}

/// How a case wants its store configured.
#[derive(Debug, Clone)]
pub struct StoreSpec {
    /// A store name unique to the case, so cases never see each other.
    pub name: String,
    pub default_ttl: Option<Duration>,
    pub prefix: String,
}

/// Makes stores for the suite.
#[async_trait]
pub trait StoreFactory: Send + Sync {
    async fn make(&self, spec: StoreSpec) -> Arc<dyn HandleStore<Doc>>;
}

/// A TTL short enough for tests, long enough to survive a slow machine
/// between the write and the first read.
const SHORT: Duration = Duration::from_millis(1500);

async fn wait_past(ttl: Duration) {
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
}

/// Runs every case. `tag` makes store names unique across runs that share
/// a cluster.
pub async fn run_all(f: &dyn StoreFactory, tag: &str) {
    mint_get(f, tag).await;
    ids(f, tag).await;
    unknown_and_malformed(f, tag).await;
    put_is_upsert(f, tag).await;
    delete_reports_existence(f, tag).await;
    len_counts_live_per_store(f, tag).await;
    ttl_expiry_hides_everywhere(f, tag).await;
    ttl_default_and_never(f, tag).await;
    update_read_modify_write(f, tag).await;
    concurrent_updates_lose_nothing(f, tag).await;
    close_refuses(f, tag).await;
}

async fn store(
    f: &dyn StoreFactory,
    tag: &str,
    case: &str,
    default_ttl: Option<Duration>,
    prefix: &str,
) -> Arc<dyn HandleStore<Doc>> {
    f.make(StoreSpec {
        name: format!("{case}-{tag}"),
        default_ttl,
        prefix: prefix.into(),
    })
    .await
}

pub async fn mint_get(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "mintget", None, "").await;
    let id = s.mint(doc("a"), Ttl::Default).await.expect("mint");
    assert_eq!(
        s.get(&id).await.expect("get"),
        Some(doc("a")),
        "a minted value reads back"
    );
}

pub async fn ids(f: &dyn StoreFactory, tag: &str) {
    let plain = store(f, tag, "ids", None, "").await;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..50 {
        let id = plain.mint(doc("x"), Ttl::Default).await.expect("mint");
        assert_eq!(id.len(), 26, "ids are 26 characters: {id}");
        crate::id::validate_handle_id(&id).expect("minted ids are valid");
        assert!(seen.insert(id), "minted ids are unique");
    }
    let prefixed = store(f, tag, "idsp", None, "cart").await;
    let id = prefixed.mint(doc("x"), Ttl::Default).await.expect("mint");
    assert!(
        id.starts_with("cart-") && id.len() == 31,
        "prefix gives cart-<26>: {id}"
    );
    assert_eq!(prefixed.get(&id).await.expect("get"), Some(doc("x")));
}

pub async fn unknown_and_malformed(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "unknown", None, "").await;
    let unknown = crate::id::new_handle_id("");
    assert_eq!(
        s.get(&unknown).await.expect("get unknown"),
        None,
        "unknown id reads as None"
    );
    assert!(
        !s.delete(&unknown).await.expect("delete unknown"),
        "deleting an unknown id: existed=false"
    );
    for bad in [
        "",
        "nope",
        "lowercase-aaaaaaaaaaaaaaaaaaaaaaaaaa",
        "AAAAAAAAAAAAAAAAAAAAAAAAA1",
    ] {
        for res in [
            s.get(bad).await.map(|_| ()),
            s.put(bad, doc("x"), Ttl::Default).await.map(|_| ()),
            s.delete(bad).await.map(|_| ()),
            s.update(bad, &mut |d: &mut Doc| d.items.push(1)).await.map(|_| ()),
        ] {
            assert!(
                matches!(res, Err(Error::InvalidArgument(_))),
                "malformed id {bad:?} gives InvalidArgument, got {res:?}"
            );
        }
    }
    assert_eq!(s.len().await.expect("len"), 0, "bad input changed nothing");
}

pub async fn put_is_upsert(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "put", None, "").await;
    let id = s.mint(doc("v1"), Ttl::Default).await.expect("mint");
    assert!(
        s.put(&id, doc("v2"), Ttl::Default).await.expect("put"),
        "put over a live handle: existed=true"
    );
    assert_eq!(s.get(&id).await.expect("get"), Some(doc("v2")));
    let fresh = crate::id::new_handle_id("");
    assert!(
        !s.put(&fresh, doc("new"), Ttl::Default).await.expect("put new"),
        "put of a new id: existed=false"
    );
    assert_eq!(s.get(&fresh).await.expect("get"), Some(doc("new")), "put creates");
}

pub async fn delete_reports_existence(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "delete", None, "").await;
    let id = s.mint(doc("a"), Ttl::Default).await.expect("mint");
    assert!(s.delete(&id).await.expect("delete"), "first delete: existed=true");
    assert!(
        !s.delete(&id).await.expect("delete again"),
        "second delete: existed=false"
    );
    assert_eq!(s.get(&id).await.expect("get"), None);
}

pub async fn len_counts_live_per_store(f: &dyn StoreFactory, tag: &str) {
    let a = store(f, tag, "lena", None, "").await;
    let b = store(f, tag, "lenb", None, "").await;
    let mut ids = vec![];
    for i in 0..5 {
        ids.push(a.mint(doc(&i.to_string()), Ttl::Default).await.expect("mint"));
    }
    b.mint(doc("other"), Ttl::Default).await.expect("mint");
    assert_eq!(a.len().await.expect("len"), 5);
    assert_eq!(b.len().await.expect("len"), 1, "stores are counted separately");
    a.delete(&ids[0]).await.expect("delete");
    a.put(&ids[1], doc("again"), Ttl::Default).await.expect("put");
    assert_eq!(
        a.len().await.expect("len"),
        4,
        "delete lowers len, overwrite does not raise it"
    );
}

pub async fn ttl_expiry_hides_everywhere(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "ttl", None, "").await;
    let short = s.mint(doc("short"), Ttl::After(SHORT)).await.expect("mint");
    let long = s.mint(doc("long"), Ttl::Never).await.expect("mint");
    let short2 = s.mint(doc("short2"), Ttl::After(SHORT)).await.expect("mint");
    let short3 = s.mint(doc("short3"), Ttl::After(SHORT)).await.expect("mint");
    assert_eq!(
        s.get(&short).await.expect("get"),
        Some(doc("short")),
        "alive before its ttl"
    );
    assert_eq!(s.len().await.expect("len"), 4);
    wait_past(SHORT).await;
    assert_eq!(s.get(&short).await.expect("get"), None, "expired: get is None");
    assert_eq!(s.len().await.expect("len"), 1, "expired handles are not counted");
    assert!(
        !s.delete(&short2).await.expect("delete"),
        "expired: delete says it did not exist"
    );
    assert!(
        !s.put(&short3, doc("back"), Ttl::Never).await.expect("put"),
        "expired: put says it did not exist"
    );
    assert_eq!(
        s.get(&short3).await.expect("get"),
        Some(doc("back")),
        "put over an expired handle creates it anew"
    );
    assert_eq!(s.get(&long).await.expect("get"), Some(doc("long")));
    assert_eq!(
        s.update(&short, &mut |d: &mut Doc| d.items.push(1))
            .await
            .expect("update"),
        None,
        "expired: update finds nothing"
    );
    assert_eq!(s.len().await.expect("len"), 2);
}

pub async fn ttl_default_and_never(f: &dyn StoreFactory, tag: &str) {
    let with_default = store(f, tag, "ttldef", Some(SHORT), "").await;
    let by_default = with_default.mint(doc("d"), Ttl::Default).await.expect("mint");
    let zero = with_default
        .mint(doc("z"), Ttl::After(Duration::ZERO))
        .await
        .expect("mint");
    let never = with_default.mint(doc("n"), Ttl::Never).await.expect("mint");
    let explicit = with_default
        .mint(doc("e"), Ttl::After(Duration::from_secs(3600)))
        .await
        .expect("mint");
    let no_default = store(f, tag, "ttlnodef", None, "").await;
    let forever = no_default.mint(doc("f"), Ttl::Default).await.expect("mint");
    wait_past(SHORT).await;
    assert_eq!(
        with_default.get(&by_default).await.expect("get"),
        None,
        "Ttl::Default uses the store default"
    );
    assert_eq!(
        with_default.get(&zero).await.expect("get"),
        None,
        "a zero ttl means the store default"
    );
    assert_eq!(
        with_default.get(&never).await.expect("get"),
        Some(doc("n")),
        "Ttl::Never ignores the default"
    );
    assert_eq!(
        with_default.get(&explicit).await.expect("get"),
        Some(doc("e")),
        "an explicit ttl wins over the default"
    );
    assert_eq!(
        no_default.get(&forever).await.expect("get"),
        Some(doc("f")),
        "no default: never expires"
    );
}

pub async fn update_read_modify_write(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "update", None, "").await;
    let id = s
        .mint(doc("u"), Ttl::After(Duration::from_secs(3600)))
        .await
        .expect("mint");
    let new = s.update(&id, &mut |d: &mut Doc| d.items.push(7)).await.expect("update");
    assert_eq!(
        new,
        Some(Doc {
            name: "u".into(),
            items: vec![7]
        })
    );
    assert_eq!(s.get(&id).await.expect("get"), new);
    let missing = crate::id::new_handle_id("");
    assert_eq!(
        s.update(&missing, &mut |d: &mut Doc| d.items.push(1))
            .await
            .expect("update"),
        None
    );
    assert_eq!(s.get(&missing).await.expect("get"), None, "update never creates");
}

pub async fn concurrent_updates_lose_nothing(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "concurrent", None, "").await;
    let id = s.mint(doc("c"), Ttl::Default).await.expect("mint");
    let writers = 4u32;
    let per = 10u32;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (s, id) = (s.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..per {
                let item = w * 1000 + i;
                s.update(&id, &mut |d: &mut Doc| d.items.push(item))
                    .await
                    .expect("update");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer task");
    }
    let mut items = s.get(&id).await.expect("get").expect("exists").items;
    items.sort_unstable();
    let mut want: Vec<u32> = (0..writers).flat_map(|w| (0..per).map(move |i| w * 1000 + i)).collect();
    want.sort_unstable();
    assert_eq!(items, want, "every concurrent update landed exactly once");
}

pub async fn close_refuses(f: &dyn StoreFactory, tag: &str) {
    let s = store(f, tag, "close", None, "").await;
    let id = s.mint(doc("a"), Ttl::Default).await.expect("mint");
    s.close().await.expect("close");
    assert!(
        matches!(s.get(&id).await, Err(Error::Closed)),
        "calls after close fail with Closed"
    );
    assert!(matches!(s.mint(doc("b"), Ttl::Default).await, Err(Error::Closed)));
}

pub mod state;
