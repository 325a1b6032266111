//! The StateTool contract: one suite for every implementation.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use crate::{DeleteOptions, Error, ListOptions, StateTool, StateValue, StoreItem, StoreOptions, Ttl};

/// Makes state tools for the suite; each call must return one that shares
/// nothing with earlier ones (e.g. a fresh namespace).
#[async_trait]
pub trait StateFactory: Send + Sync {
    async fn make(&self, name: &str, default_ttl: Option<Duration>) -> Arc<dyn StateTool>;
}

const SHORT: Duration = Duration::from_millis(1500);

fn opts(ttl: Ttl) -> StoreOptions {
    StoreOptions {
        ttl,
        expected_revision: None,
    }
}

/// Runs every case.
pub async fn run_all(f: &dyn StateFactory, tag: &str) {
    store_retrieve(f, tag).await;
    keys_are_validated(f, tag).await;
    compare_and_set(f, tag).await;
    create_only(f, tag).await;
    ttl_expiry(f, tag).await;
    list_pages_in_order(f, tag).await;
    delete_by_prefix(f, tag).await;
    batches_are_atomic(f, tag).await;
}

async fn tool(f: &dyn StateFactory, tag: &str, case: &str, ttl: Option<Duration>) -> Arc<dyn StateTool> {
    f.make(&format!("{case}-{tag}"), ttl).await
}

pub async fn store_retrieve(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "storeret", None).await;
    let r1 = t
        .store(
            "checkpoints/agent-7/latest",
            json!({"step": 3}).into(),
            opts(Ttl::Default),
        )
        .await
        .expect("store");
    let e = t
        .retrieve("checkpoints/agent-7/latest")
        .await
        .expect("retrieve")
        .expect("present");
    assert_eq!(e.value, Some(StateValue::Json(json!({"step": 3}))));
    assert_eq!((e.create_revision, e.mod_revision), (r1, r1));
    assert_eq!(e.expires_at_ms, None);
    let r2 = t
        .store(
            "checkpoints/agent-7/latest",
            json!({"step": 4}).into(),
            opts(Ttl::Default),
        )
        .await
        .expect("store");
    assert!(r2 > r1, "revisions grow");
    let e = t
        .retrieve("checkpoints/agent-7/latest")
        .await
        .expect("retrieve")
        .expect("present");
    assert_eq!(
        (e.create_revision, e.mod_revision),
        (r1, r2),
        "an overwrite keeps create_revision"
    );
    t.store("blob", StateValue::Bytes(vec![0, 1, 255]), opts(Ttl::Default))
        .await
        .expect("store bytes");
    assert_eq!(
        t.retrieve("blob").await.expect("retrieve").and_then(|e| e.value),
        Some(StateValue::Bytes(vec![0, 1, 255])),
        "bytes round-trip unchanged"
    );
    assert!(t.exists("blob").await.expect("exists"));
    assert!(!t.exists("nope").await.expect("exists"));
    assert_eq!(t.retrieve("nope").await.expect("retrieve"), None);
    let d = t.delete("blob", DeleteOptions::default()).await.expect("delete");
    assert_eq!((d.count, d.more), (1, false));
    assert_eq!(
        t.delete("blob", DeleteOptions::default()).await.expect("delete").count,
        0
    );
    assert!(!t.exists("blob").await.expect("exists"));
}

pub async fn keys_are_validated(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "keys", None).await;
    for bad in ["", "/lead", "trail/", "dou//ble", "ctl\u{1}"] {
        let r = t.store(bad, json!(1).into(), opts(Ttl::Default)).await;
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "store {bad:?}: {r:?}");
        assert!(
            matches!(t.retrieve(bad).await, Err(Error::InvalidArgument(_))),
            "retrieve {bad:?}"
        );
        assert!(
            matches!(t.exists(bad).await, Err(Error::InvalidArgument(_))),
            "exists {bad:?}"
        );
    }
    let long = "k".repeat(1025);
    assert!(matches!(
        t.store(&long, json!(1).into(), opts(Ttl::Default)).await,
        Err(Error::InvalidArgument(_))
    ));
    let r = t.delete("", DeleteOptions::prefix(10)).await;
    assert!(
        matches!(r, Err(Error::InvalidArgument(_))),
        "an empty prefix delete is refused: {r:?}"
    );
    let r = t
        .batch_store(vec![StoreItem::new("a", json!(1)), StoreItem::new("a", json!(2))])
        .await;
    assert!(
        matches!(r, Err(Error::InvalidArgument(_))),
        "a batch naming a key twice: {r:?}"
    );
    assert!(
        t.list("", ListOptions::default())
            .await
            .expect("list")
            .entries
            .is_empty(),
        "nothing was stored"
    );
}

pub async fn compare_and_set(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "cas", None).await;
    let r1 = t
        .store("doc", json!(1).into(), opts(Ttl::Default))
        .await
        .expect("store");
    let cas = |rev| StoreOptions {
        ttl: Ttl::Default,
        expected_revision: Some(rev),
    };
    let r2 = t
        .store("doc", json!(2).into(), cas(r1))
        .await
        .expect("matching revision");
    let err = t
        .store("doc", json!(3).into(), cas(r1))
        .await
        .expect_err("stale revision");
    assert!(
        matches!(err, Error::Conflict { current_revision, .. } if current_revision == r2),
        "{err:?}"
    );
    let err = t
        .store("missing", json!(1).into(), cas(1))
        .await
        .expect_err("absent key");
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let del = DeleteOptions {
        expected_revision: Some(r1),
        ..Default::default()
    };
    assert!(matches!(t.delete("doc", del).await, Err(Error::Conflict { .. })));
    let e = t.retrieve("doc").await.expect("retrieve").expect("present");
    assert_eq!(
        e.value,
        Some(StateValue::Json(json!(2))),
        "failed compare-and-sets changed nothing"
    );
    let del = DeleteOptions {
        expected_revision: Some(r2),
        ..Default::default()
    };
    assert_eq!(t.delete("doc", del).await.expect("delete").count, 1);
}

/// `expected_revision: Some(0)` stores only where no key is: the first
/// claim wins, a second gets a conflict naming the winner's revision, in a
/// batch as alone, and a deleted key can be claimed again.
pub async fn create_only(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "create", None).await;
    let create = StoreOptions {
        ttl: Ttl::Default,
        expected_revision: Some(0),
    };
    let r1 = t.store("claim", json!("a").into(), create).await.expect("first claim");
    let err = t
        .store("claim", json!("b").into(), create)
        .await
        .expect_err("second claim");
    assert!(
        matches!(err, Error::Conflict { current_revision, .. } if current_revision == r1),
        "{err:?}"
    );
    let mut item = StoreItem::new("claim", json!("c"));
    item.expected_revision = Some(0);
    let err = t
        .batch_store(vec![StoreItem::new("other", json!(1)), item])
        .await
        .expect_err("a batch claiming a taken key");
    assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
    assert!(
        !t.exists("other").await.expect("exists"),
        "the failed batch wrote nothing"
    );
    let e = t.retrieve("claim").await.expect("retrieve").expect("present");
    assert_eq!(e.value, Some(StateValue::Json(json!("a"))), "the first claim stands");
    assert_eq!(
        t.delete("claim", DeleteOptions::default()).await.expect("delete").count,
        1
    );
    t.store("claim", json!("d").into(), create)
        .await
        .expect("a deleted key is free again");
}

pub async fn ttl_expiry(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "ttl", Some(SHORT)).await;
    t.store("short", json!(1).into(), opts(Ttl::After(SHORT)))
        .await
        .expect("store");
    t.store("default", json!(1).into(), opts(Ttl::Default))
        .await
        .expect("store");
    t.store("never", json!(1).into(), opts(Ttl::Never))
        .await
        .expect("store");
    let e = t.retrieve("short").await.expect("retrieve").expect("alive");
    assert!(e.expires_at_ms.is_some());
    tokio::time::sleep(SHORT + Duration::from_millis(300)).await;
    assert_eq!(t.retrieve("short").await.expect("retrieve"), None, "expired");
    assert!(!t.exists("default").await.expect("exists"), "the default TTL applied");
    assert!(t.exists("never").await.expect("exists"));
    let page = t.list("", ListOptions::default()).await.expect("list");
    let keys: Vec<_> = page.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["never"], "list hides expired keys");
    let got = t
        .batch_retrieve(&["short".into(), "never".into()])
        .await
        .expect("batch");
    assert!(got[0].is_none() && got[1].is_some());
}

pub async fn list_pages_in_order(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "list", None).await;
    let mut items = Vec::new();
    for i in 0..25 {
        items.push(StoreItem::new(format!("logs/agent-1/{i:03}"), json!(i)));
    }
    items.push(StoreItem::new("logs/agent-2/000", json!("other")));
    items.push(StoreItem::new("logsx", json!("not under logs/")));
    t.batch_store(items).await.expect("batch");
    let mut keys = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = t
            .list(
                "logs/agent-1/",
                ListOptions {
                    limit: 7,
                    page_token: token.clone(),
                    with_values: true,
                },
            )
            .await
            .expect("list");
        assert!(page.entries.len() <= 7);
        for e in &page.entries {
            assert!(e.value.is_some(), "with_values returns values");
        }
        keys.extend(page.entries.into_iter().map(|e| e.key));
        pages += 1;
        match page.next_page_token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    let want: Vec<String> = (0..25).map(|i| format!("logs/agent-1/{i:03}")).collect();
    assert_eq!(keys, want, "every key under the prefix, once, in order");
    assert_eq!(pages, 4);
    let all = t
        .list(
            "logs/",
            ListOptions {
                limit: 1000,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(all.entries.len(), 26, "the prefix is a byte prefix of the path");
    assert!(all.entries.iter().all(|e| e.value.is_none()), "no values unless asked");
    assert_eq!(all.next_page_token, None);
    let err = t
        .list(
            "logs/",
            ListOptions {
                page_token: Some("!!bad".into()),
                ..Default::default()
            },
        )
        .await
        .expect_err("bad token");
    assert!(matches!(err, Error::InvalidArgument(_)));
    let err = t
        .list(
            "",
            ListOptions {
                limit: 1001,
                ..Default::default()
            },
        )
        .await
        .expect_err("too big a page");
    assert!(matches!(err, Error::InvalidArgument(_)));
}

pub async fn delete_by_prefix(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "delprefix", None).await;
    let items = (0..12)
        .map(|i| StoreItem::new(format!("tmp/{i:02}"), json!(i)))
        .collect();
    t.batch_store(items).await.expect("batch");
    t.store("tmpx", json!("kept").into(), opts(Ttl::Default))
        .await
        .expect("store");
    let d = t.delete("tmp/", DeleteOptions::prefix(5)).await.expect("delete");
    assert_eq!(
        (d.count, d.more),
        (5, true),
        "bounded by the limit, and says more remain"
    );
    let left = t.list("tmp/", ListOptions::default()).await.expect("list").entries;
    assert_eq!(
        left.first().map(|e| e.key.as_str()),
        Some("tmp/05"),
        "the first keys in order went"
    );
    let d = t.delete("tmp/", DeleteOptions::prefix(100)).await.expect("delete");
    assert_eq!((d.count, d.more), (7, false));
    assert!(t.exists("tmpx").await.expect("exists"), "keys outside the prefix stay");
}

pub async fn batches_are_atomic(f: &dyn StateFactory, tag: &str) {
    let t = tool(f, tag, "batch", None).await;
    let r = t.store("a", json!(1).into(), opts(Ttl::Default)).await.expect("store");
    let rev = t
        .batch_store(vec![StoreItem::new("b", json!(2)), StoreItem::new("c", json!(3))])
        .await
        .expect("batch");
    let got = t
        .batch_retrieve(&["a".into(), "b".into(), "c".into(), "d".into()])
        .await
        .expect("batch retrieve");
    assert_eq!(got.len(), 4);
    assert_eq!(
        got[1].as_ref().map(|e| e.mod_revision),
        Some(rev),
        "one revision for the whole batch"
    );
    assert_eq!(got[2].as_ref().map(|e| e.mod_revision), Some(rev));
    assert!(got[3].is_none());
    // One failing compare-and-set: nothing of the batch is stored.
    let bad = vec![
        StoreItem::new("new-1", json!(1)),
        StoreItem {
            expected_revision: Some(r + 1000),
            ..StoreItem::new("a", json!("changed"))
        },
        StoreItem::new("new-2", json!(2)),
    ];
    let err = t.batch_store(bad).await.expect_err("one precondition fails");
    assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
    assert!(!t.exists("new-1").await.expect("exists") && !t.exists("new-2").await.expect("exists"));
    let a = t.retrieve("a").await.expect("retrieve").expect("present");
    assert_eq!(a.value, Some(StateValue::Json(json!(1))));
    let ok = vec![
        StoreItem {
            expected_revision: Some(a.mod_revision),
            ..StoreItem::new("a", json!("changed"))
        },
        StoreItem::new("new-1", json!(1)),
    ];
    t.batch_store(ok).await.expect("all preconditions hold");
    assert!(t.exists("new-1").await.expect("exists"));
}
