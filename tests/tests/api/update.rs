//! Compare-and-set: two writers on different nodes updating one handle
//! lose no update.

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Error, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Cart {
    items: Vec<String>,
}

#[tokio::test(flavor = "multi_thread")]
async fn two_writers_lose_no_update() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let a: ClusterHandleStore<Cart> = cluster.client_for(1).handle_store("cart").build();
    let b: ClusterHandleStore<Cart> = cluster.client_for(2).handle_store("cart").build();
    let id = a
        .mint(Cart::default(), Ttl::After(Duration::from_secs(600)))
        .await
        .expect("mint");
    let per = 25;
    let run = |store: ClusterHandleStore<Cart>, name: &'static str, id: String| async move {
        for i in 0..per {
            let item = format!("{name}-{i}");
            store
                .update(&id, &mut |c: &mut Cart| c.items.push(item.clone()))
                .await
                .expect("update")
                .expect("cart exists");
        }
    };
    let (ra, rb) = tokio::join!(
        tokio::spawn(run(a, "a", id.clone())),
        tokio::spawn(run(b, "b", id.clone()))
    );
    ra.expect("writer a");
    rb.expect("writer b");
    let c: ClusterHandleStore<Cart> = cluster.client_for(3).handle_store("cart").build();
    let cart = c.get(&id).await.expect("get").expect("exists");
    assert_eq!(cart.items.len(), 2 * per, "no update was lost: {:?}", cart.items);
    for name in ["a", "b"] {
        for i in 0..per {
            assert_eq!(cart.items.iter().filter(|x| **x == format!("{name}-{i}")).count(), 1);
        }
    }
    // The TTL was kept by the updates (not reset to "never").
    let v = c.get_versioned(&id).await.expect("get").expect("exists");
    assert!(v.expires_at_ms.is_some(), "update keeps the expiry");

    // A stale compare-and-set is refused and changes nothing.
    let err = c
        .put_with(&id, &Cart::default(), Ttl::Default, Some(v.mod_revision - 1))
        .await
        .expect_err("stale revision");
    assert!(
        matches!(err, Error::Conflict { current_revision, .. } if current_revision == v.mod_revision),
        "{err:?}"
    );
    assert_eq!(c.get(&id).await.expect("get").expect("exists").items.len(), 2 * per);

    // Revision 0 is create only: refused where a handle is, allowed where
    // none is.
    let err = c
        .put_with(&id, &Cart::default(), Ttl::Default, Some(0))
        .await
        .expect_err("the handle exists");
    assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
    assert_eq!(c.get(&id).await.expect("get").expect("exists").items.len(), 2 * per);
    let fresh = handlestore_client::id::new_handle_id("cart");
    c.put_with(&fresh, &Cart::default(), Ttl::Default, Some(0))
        .await
        .expect("create only, where no handle is");
}

/// `update` reads stale first. A follower applies a write a little after
/// the leader has answered it, so right after a mint on the leader the
/// follower may not have the handle yet: `update` must then read again,
/// linearizably, and not answer that the handle does not exist.
#[tokio::test(flavor = "multi_thread")]
async fn an_update_on_a_follower_right_after_a_mint_finds_the_handle() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(30)).await.expect("leader");
    let follower = (1..=3).find(|n| *n != leader).expect("a follower");
    let on_leader: ClusterHandleStore<Cart> = cluster.client_for(leader).handle_store("cart").build();
    let on_follower: ClusterHandleStore<Cart> = cluster.client_for(follower).handle_store("cart").build();
    // How often the follower had not applied the mint yet when asked at
    // once (printed: it says whether this run exercised the re-read).
    let mut not_yet = 0;
    for i in 0..300 {
        let id = on_leader
            .mint(Cart::default(), Ttl::After(Duration::from_secs(600)))
            .await
            .expect("mint");
        if i % 2 == 0
            && on_follower
                .get_with(&id, handlestore_client::Consistency::Stale)
                .await
                .expect("stale get")
                .is_none()
        {
            not_yet += 1;
        }
        let item = format!("item-{i}");
        let cart = on_follower
            .update(&id, &mut |c: &mut Cart| c.items.push(item.clone()))
            .await
            .expect("update")
            .unwrap_or_else(|| panic!("update {i} on node {follower} found no handle {id}"));
        assert_eq!(cart.items, vec![item]);
    }
    println!("a stale read on the follower right after the mint missed it {not_yet} times of 150");
}
