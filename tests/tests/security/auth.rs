//! Authentication and authorization on real nodes: every RPC against every
//! kind of caller (no credentials, a bad token, users with and without the
//! permission, root), tenant isolation, narrowed grants, token rotation and
//! revocation taking effect on every node, client-certificate identity.

use std::time::Duration;

use futures::future::join_all;

use handlestore_client::auth::{Access, Permission};
use handlestore_client::{Client, HandleStore, NodeChannel, StateTool, StateValue, StoreOptions, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use handlestore_tests::tls::TestTls;
use tonic::Code;

const NS: &str = "a";
const OTHER_NS: &str = "b";

/// Users of the matrix, with the grants of their one role.
const USERS: [(&str, &[(&str, Access)]); 5] = [
    ("writer", &[(NS, Access::Write)]),
    ("reader", &[(NS, Access::Read)]),
    ("other", &[(OTHER_NS, Access::Write)]),
    ("codec", &[(NS, Access::Keyring)]),
    ("nsadmin", &[(NS, Access::Admin)]),
];

fn grant(ns: &str, access: Access) -> Permission {
    Permission {
        namespace: ns.into(),
        access: access as i32,
        ..Default::default()
    }
}

/// A cluster with auth on, the matrix's users, and their tokens (root's
/// first).
async fn cluster_with_users() -> (TestCluster, Vec<(String, String)>) {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let root = cluster
        .client()
        .auth_enable()
        .await
        .expect("enable")
        .expect("root's token");
    cluster.set_token(Some(root.clone()));
    let admin = cluster.client();
    let mut tokens = vec![("root".to_string(), root)];
    for (user, grants) in USERS {
        let role = format!("{user}-role");
        admin.role_add(&role).await.expect("role add");
        for (ns, access) in grants {
            admin.role_grant(&role, grant(ns, *access)).await.expect("grant");
        }
        let token = admin
            .user_add(user, &[role], false)
            .await
            .expect("user add")
            .expect("a token");
        tokens.push((user.to_string(), token));
    }
    (cluster, tokens)
}

fn client_as(cluster: &TestCluster, token: Option<&str>, ns: &str) -> Client {
    let mut b = Client::builder(cluster.endpoints())
        .namespace(ns)
        .deadline(Duration::from_secs(10));
    if let Some(t) = token {
        b = b.token(t);
    }
    b.build().expect("client")
}

/// Every RPC, with a request that is valid for a caller allowed to make
/// it (and harmless: root's membership calls are malformed on purpose).
#[derive(Debug, Clone, Copy)]
enum Rpc {
    Mint,
    Put,
    Get,
    Delete,
    Len,
    HandleList,
    HandleEvict,
    Store,
    Retrieve,
    StateDelete,
    List,
    Exists,
    BatchStore,
    BatchRetrieve,
    Status,
    AddLearner,
    ChangeMembership,
    Snapshot,
    SnapshotSave,
    TransferLeader,
    KeyringIds,
    KeyringSecrets,
    KeyringRotate,
    KeyringRetire,
    UserList,
    UserRemove,
    RoleAdd,
    RoleList,
    Watch,
    WatchStore,
}

const RPCS: [Rpc; 30] = [
    Rpc::Mint,
    Rpc::Put,
    Rpc::Get,
    Rpc::Delete,
    Rpc::Len,
    Rpc::HandleList,
    Rpc::HandleEvict,
    Rpc::Store,
    Rpc::Retrieve,
    Rpc::StateDelete,
    Rpc::List,
    Rpc::Exists,
    Rpc::BatchStore,
    Rpc::BatchRetrieve,
    Rpc::Status,
    Rpc::AddLearner,
    Rpc::ChangeMembership,
    Rpc::Snapshot,
    Rpc::SnapshotSave,
    Rpc::TransferLeader,
    Rpc::KeyringIds,
    Rpc::KeyringSecrets,
    Rpc::KeyringRotate,
    Rpc::KeyringRetire,
    Rpc::UserList,
    Rpc::UserRemove,
    Rpc::RoleAdd,
    Rpc::RoleList,
    Rpc::Watch,
    Rpc::WatchStore,
];

impl Rpc {
    /// The users allowed to make it (root always is).
    fn allowed(self) -> &'static [&'static str] {
        use Rpc::*;
        match self {
            Mint | Put | Delete | Store | StateDelete | BatchStore => &["writer", "nsadmin"],
            Get | Len | Retrieve | List | Exists | BatchRetrieve | KeyringIds | Watch | WatchStore => {
                &["writer", "reader", "nsadmin"]
            }
            Status => &["writer", "reader", "other", "codec", "nsadmin"],
            KeyringSecrets => &["codec", "nsadmin"],
            KeyringRotate | KeyringRetire | HandleList | HandleEvict => &["nsadmin"],
            AddLearner | ChangeMembership | Snapshot | SnapshotSave | TransferLeader | UserList | UserRemove
            | RoleAdd | RoleList => &[],
        }
    }

    async fn call(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        match self {
            Rpc::Mint | Rpc::Put | Rpc::Get | Rpc::Delete | Rpc::Len => self.handles(ch).await,
            Rpc::HandleList | Rpc::HandleEvict => self.handle_admin(ch).await,
            Rpc::Store
            | Rpc::Retrieve
            | Rpc::StateDelete
            | Rpc::List
            | Rpc::Exists
            | Rpc::BatchStore
            | Rpc::BatchRetrieve => self.state(ch).await,
            Rpc::UserList | Rpc::UserRemove | Rpc::RoleAdd | Rpc::RoleList => self.auth(ch).await,
            Rpc::Watch | Rpc::WatchStore => self.watch(ch).await,
            _ => self.admin(ch).await,
        }
    }

    /// A watch is refused when it is opened (and, once opened, answers
    /// that it is established).
    async fn watch(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        let target = match self {
            Rpc::Watch => pb::watch_request::Target::Prefix(String::new()),
            _ => pb::watch_request::Target::Store("cart".into()),
        };
        let req = pb::WatchRequest {
            namespace: NS.into(),
            target: Some(target),
            ..Default::default()
        };
        let mut stream = pb::watch_client::WatchClient::new(ch).watch(req).await?.into_inner();
        let first = stream.message().await?;
        assert!(
            first.is_some_and(|r| r.created),
            "the first answer says the watch is established"
        );
        Ok(())
    }

    async fn handles(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        let mut c = pb::handles_client::HandlesClient::new(ch);
        let (ns, store, id) = (
            NS.to_string(),
            "cart".to_string(),
            handlestore_proto::id::new_handle_id(""),
        );
        match self {
            Rpc::Mint => c
                .mint(pb::MintRequest {
                    namespace: ns,
                    store,
                    value: b"{}".to_vec(),
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::Put => c
                .put(pb::PutRequest {
                    namespace: ns,
                    store,
                    id,
                    value: b"{}".to_vec(),
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::Get => c
                .get(pb::GetRequest {
                    namespace: ns,
                    store,
                    id,
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::Delete => c
                .delete(pb::DeleteRequest {
                    namespace: ns,
                    store,
                    id,
                    ..Default::default()
                })
                .await
                .map(drop),
            _ => c
                .len(pb::LenRequest {
                    namespace: ns,
                    store,
                    ..Default::default()
                })
                .await
                .map(drop),
        }
    }

    async fn handle_admin(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        let mut c = pb::handles_client::HandlesClient::new(ch);
        let (namespace, store) = (NS.to_string(), "cart".to_string());
        match self {
            Rpc::HandleList => c
                .list(pb::HandleListRequest {
                    namespace,
                    store,
                    ..Default::default()
                })
                .await
                .map(drop),
            _ => c
                .evict(pb::EvictRequest {
                    namespace,
                    store,
                    what: Some(pb::evict_request::What::Id(handlestore_proto::id::new_handle_id(""))),
                    limit: 0,
                })
                .await
                .map(drop),
        }
    }

    async fn state(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        let mut c = pb::state_client::StateClient::new(ch);
        let ns = NS.to_string();
        let value = Some(pb::StateValue {
            kind: Some(pb::state_value::Kind::Json("1".into())),
        });
        match self {
            Rpc::Store => c
                .store(pb::StoreRequest {
                    namespace: ns,
                    key: "k".into(),
                    value,
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::Retrieve => c
                .retrieve(pb::RetrieveRequest {
                    namespace: ns,
                    key: "k".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::StateDelete => c
                .delete(pb::StateDeleteRequest {
                    namespace: ns,
                    key: "k".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::List => c
                .list(pb::ListRequest {
                    namespace: ns,
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::Exists => c
                .exists(pb::ExistsRequest {
                    namespace: ns,
                    key: "k".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::BatchStore => {
                let items = vec![pb::StoreItem {
                    key: "k2".into(),
                    value,
                    ..Default::default()
                }];
                c.batch_store(pb::BatchStoreRequest {
                    namespace: ns,
                    items,
                    ..Default::default()
                })
                .await
                .map(drop)
            }
            _ => c
                .batch_retrieve(pb::BatchRetrieveRequest {
                    namespace: ns,
                    keys: vec!["k".into()],
                    ..Default::default()
                })
                .await
                .map(drop),
        }
    }

    async fn admin(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        let mut c = pb::admin_client::AdminClient::new(ch);
        let ns = NS.to_string();
        match self {
            Rpc::Status => c.status(pb::StatusRequest {}).await.map(drop),
            Rpc::AddLearner => c
                .add_learner(pb::AddLearnerRequest {
                    id: 0,
                    ..Default::default()
                })
                .await
                .map(drop),
            Rpc::ChangeMembership => c
                .change_membership(pb::ChangeMembershipRequest::default())
                .await
                .map(drop),
            Rpc::Snapshot => c.snapshot(pb::SnapshotRequest {}).await.map(drop),
            Rpc::SnapshotSave => c.snapshot_save(pb::SnapshotSaveRequest {}).await.map(drop),
            // To a node that is no voter: refused, leadership stays.
            Rpc::TransferLeader => c.transfer_leader(pb::TransferLeaderRequest { to: 99 }).await.map(drop),
            Rpc::KeyringIds | Rpc::KeyringSecrets => {
                let include_secrets = matches!(self, Rpc::KeyringSecrets);
                c.keyring_list(pb::KeyringListRequest {
                    namespace: ns,
                    include_secrets,
                    read: None,
                })
                .await
                .map(drop)
            }
            Rpc::KeyringRotate => c
                .keyring_rotate(pb::KeyringRotateRequest {
                    namespace: ns,
                    ..Default::default()
                })
                .await
                .map(drop),
            _ => c
                .keyring_retire(pb::KeyringRetireRequest {
                    namespace: ns,
                    key_id: "nokey".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
        }
    }

    async fn auth(self, ch: NodeChannel) -> Result<(), tonic::Status> {
        let mut c = pb::auth_client::AuthClient::new(ch);
        match self {
            Rpc::UserList => c.user_list(pb::UserListRequest {}).await.map(drop),
            Rpc::UserRemove => c
                .user_remove(pb::UserRemoveRequest { name: "nobody".into() })
                .await
                .map(drop),
            Rpc::RoleAdd => c
                .role_add(pb::RoleAddRequest {
                    name: format!("r{}", rand_suffix()),
                })
                .await
                .map(drop),
            _ => c.role_list(pb::RoleListRequest {}).await.map(drop),
        }
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The auth matrix: no credentials and a bad token are UNAUTHENTICATED on
/// every RPC; a user is PERMISSION_DENIED exactly where its role grants
/// nothing, and root never is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_answers_each_kind_of_caller_with_the_right_code() {
    let (cluster, tokens) = cluster_with_users().await;
    let unknown = "hs1_AAAAAAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let mut callers: Vec<(String, Option<String>)> = vec![
        ("no credentials".into(), None),
        ("a malformed token".into(), Some("not-a-token".into())),
        ("an unknown token".into(), Some(unknown.into())),
    ];
    callers.extend(tokens.iter().map(|(u, t)| (u.clone(), Some(t.clone()))));
    let mut wrong = Vec::new();
    for rpc in RPCS {
        for (who, token) in &callers {
            let ch = client_as(&cluster, token.as_deref(), NS).channel(0).expect("channel");
            let got = rpc.call(ch).await.err().map(|s| s.code());
            let authenticated = tokens.iter().any(|(u, _)| u == who);
            let allowed = who == "root" || rpc.allowed().contains(&who.as_str());
            let ok = match (authenticated, allowed) {
                (false, _) => got == Some(Code::Unauthenticated),
                (true, false) => got == Some(Code::PermissionDenied),
                (true, true) => !matches!(got, Some(Code::Unauthenticated | Code::PermissionDenied)),
            };
            if !ok {
                wrong.push(format!("{rpc:?} by {who}: {got:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "wrong answers:\n{}", wrong.join("\n"));
}

/// Writes carried by one Submit call: bad credentials fail the call, a
/// missing permission fails each write it covers and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_refuses_bad_credentials_whole_and_denied_writes_one_by_one() {
    let (cluster, tokens) = cluster_with_users().await;
    let token = |u: &str| tokens.iter().find(|(n, _)| n == u).map(|(_, t)| t.clone());
    let mint = |ns: &str| pb::Write {
        op: Some(pb::write::Op::Mint(pb::MintRequest {
            namespace: ns.into(),
            store: "cart".into(),
            value: b"{}".to_vec(),
            ..Default::default()
        })),
    };
    let submit = |t: Option<String>| {
        let ch = client_as(&cluster, t.as_deref(), NS).channel(0).expect("channel");
        let req = pb::SubmitRequest {
            writes: vec![mint(NS), mint(OTHER_NS)],
        };
        async move { pb::writes_client::WritesClient::new(ch).submit(req).await }
    };
    let s = submit(None).await.expect_err("no credentials");
    assert_eq!(s.code(), Code::Unauthenticated);
    let r = submit(token("writer")).await.expect("call").into_inner();
    let results: Vec<_> = r.results.into_iter().map(|w| w.result.expect("a result")).collect();
    assert!(matches!(results[0], pb::write_result::Result::Mint(_)), "{results:?}");
    match &results[1] {
        pb::write_result::Result::Failure(f) => assert_eq!(f.code, Code::PermissionDenied as i32, "{f:?}"),
        other => panic!("a write into b by a writer of a: {other:?}"),
    }
    let b = cluster.client().with_namespace(OTHER_NS).expect("b");
    assert_eq!(
        b.handle_store::<serde_json::Value>("cart")
            .build()
            .len()
            .await
            .expect("len"),
        0
    );
}

/// Reads carried by one Reads.Submit call: bad credentials fail the call,
/// a missing permission fails each read it covers, and the others are
/// served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_submit_refuses_bad_credentials_whole_and_denied_reads_one_by_one() {
    let (cluster, tokens) = cluster_with_users().await;
    let token = |u: &str| tokens.iter().find(|(n, _)| n == u).map(|(_, t)| t.clone());
    let root = cluster.client().with_namespace(NS).expect("a");
    let cart = root
        .handle_store::<serde_json::Value>("cart")
        .build()
        .mint(serde_json::json!({"mine": true}), Ttl::Never)
        .await
        .expect("mint");
    let get = |ns: &str| pb::Read {
        op: Some(pb::read::Op::Get(pb::GetRequest {
            namespace: ns.into(),
            store: "cart".into(),
            id: cart.clone(),
            read: None,
        })),
    };
    let submit = |t: Option<String>| {
        let ch = client_as(&cluster, t.as_deref(), NS).channel(0).expect("channel");
        let req = pb::ReadsRequest {
            reads: vec![get(NS), get(OTHER_NS)],
        };
        async move { pb::reads_client::ReadsClient::new(ch).submit(req).await }
    };
    let s = submit(None).await.expect_err("no credentials");
    assert_eq!(s.code(), Code::Unauthenticated);
    let s = submit(Some("hs1_AAAAAAAAAAAAAAAA_BBBB".into()))
        .await
        .expect_err("a forged token");
    assert_eq!(s.code(), Code::Unauthenticated);
    let r = submit(token("writer")).await.expect("call").into_inner();
    let results: Vec<_> = r.results.into_iter().map(|w| w.result.expect("a result")).collect();
    match &results[0] {
        pb::read_result::Result::Get(g) => assert_eq!(g.value, br#"{"mine":true}"#),
        other => panic!("a read of a by a writer of a: {other:?}"),
    }
    match &results[1] {
        pb::read_result::Result::Failure(f) => assert_eq!(f.code, Code::PermissionDenied as i32, "{f:?}"),
        other => panic!("a read of b by a writer of a: {other:?}"),
    }
    // A user of b, reading a's cart among reads of its own: only a's is refused.
    let intruder = client_as(&cluster, token("other").as_deref(), NS);
    let reads = intruder.handle_store::<serde_json::Value>("cart").build();
    let own = intruder.with_namespace(OTHER_NS).expect("b").state_tool();
    let got = join_all((0..20).map(|i| {
        let (reads, own, cart) = (&reads, &own, &cart);
        async move {
            if i == 7 {
                reads.get(cart).await.map(|_| ())
            } else {
                own.retrieve("nothing").await.map(|_| ())
            }
        }
    }))
    .await;
    assert!(
        matches!(got[7], Err(handlestore_client::Error::PermissionDenied(_))),
        "{:?}",
        got[7]
    );
    assert!(got.iter().enumerate().all(|(i, g)| i == 7 || g.is_ok()), "{got:?}");
    let stats = intruder.read_stats();
    assert!(stats.calls < stats.reads, "the reads shared calls: {stats:?}");
}

/// A user of namespace b cannot get, list, batch-read or delete in a, and
/// grants narrowed to a store or a key prefix cover only that; a listing
/// leaves out what the caller may not read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_isolated_and_narrowed_grants_cover_only_their_part() {
    let (cluster, tokens) = cluster_with_users().await;
    let root = cluster.client().with_namespace(NS).expect("a");
    let tool = root.state_tool();
    for k in ["drafts/1", "drafts/2", "secret/1"] {
        tool.store(k, StateValue::Json(serde_json::json!(1)), StoreOptions::default())
            .await
            .expect("store");
    }
    let carts = root.handle_store::<serde_json::Value>("cart").build();
    let cart = carts.mint(serde_json::json!({}), Ttl::Never).await.expect("mint");

    let other = tokens.iter().find(|(u, _)| u == "other").map(|(_, t)| t.clone());
    let intruder = client_as(&cluster, other.as_deref(), NS);
    let denied = |e: handlestore_client::Error| matches!(e, handlestore_client::Error::PermissionDenied(_));
    let itool = intruder.state_tool();
    assert!(denied(itool.retrieve("drafts/1").await.expect_err("get in a")));
    assert!(denied(itool.list("", Default::default()).await.expect_err("list in a")));
    assert!(denied(
        itool
            .batch_retrieve(&["drafts/1".to_string()])
            .await
            .expect_err("batch in a")
    ));
    assert!(denied(
        itool
            .delete("drafts/1", Default::default())
            .await
            .expect_err("delete in a")
    ));
    let icarts = intruder.handle_store::<serde_json::Value>("cart").build();
    assert!(denied(icarts.get(&cart).await.expect_err("a cart of a")));
    assert!(denied(icarts.delete(&cart).await.expect_err("delete a cart of a")));

    // Narrowed grants: drafts/ keys only, and the cart store only.
    let admin = cluster.client();
    admin.role_add("drafter").await.expect("role");
    let mut drafts = grant(NS, Access::Write);
    drafts.key_prefix = "drafts/".into();
    admin.role_grant("drafter", drafts).await.expect("grant");
    let mut carts_only = grant(NS, Access::Write);
    carts_only.store = "cart".into();
    admin.role_grant("drafter", carts_only).await.expect("grant");
    let t = admin
        .user_add("drafty", &["drafter".into()], false)
        .await
        .expect("user")
        .expect("token");
    let drafty = client_as(&cluster, Some(&t), NS);
    let dtool = drafty.state_tool();
    let page = dtool
        .list("", Default::default())
        .await
        .expect("a listing of what it may read");
    let keys: Vec<_> = page.entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["drafts/1", "drafts/2"], "secret/1 is left out");
    assert!(denied(
        dtool.retrieve("secret/1").await.expect_err("outside the prefix")
    ));
    assert!(denied(
        dtool
            .batch_retrieve(&["drafts/1".to_string(), "secret/1".to_string()])
            .await
            .expect_err("a batch naming a key outside the prefix")
    ));
    dtool
        .store(
            "drafts/3",
            StateValue::Json(serde_json::json!(1)),
            StoreOptions::default(),
        )
        .await
        .expect("inside the prefix");
    assert!(denied(
        dtool
            .store(
                "draftsx",
                StateValue::Json(serde_json::json!(1)),
                StoreOptions::default()
            )
            .await
            .expect_err("a key that merely starts alike")
    ));
    let dcarts = drafty.handle_store::<serde_json::Value>("cart").build();
    dcarts.get(&cart).await.expect("the cart store is granted");
    let jobs = drafty.handle_store::<serde_json::Value>("job").build();
    assert!(denied(
        jobs.mint(serde_json::json!({}), Ttl::Never)
            .await
            .expect_err("another store")
    ));
}

/// A rotated token, a removed user and a revoked role stop working at once
/// on every node (a linearizable read on another node sees the change).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_removal_and_revocation_take_effect_on_every_node() {
    let (cluster, tokens) = cluster_with_users().await;
    let admin = cluster.client_for(1);
    let reader = tokens
        .iter()
        .find(|(u, _)| u == "reader")
        .map(|(_, t)| t.clone())
        .expect("reader");
    let on_node3 = |t: &str| {
        cluster
            .client_builder([cluster.node(3).endpoint()])
            .token(t)
            .namespace(NS)
            .build()
            .expect("client")
    };
    // The state tool reads linearizably by default.
    let exists = |c: Client| async move { c.state_tool().exists("k").await };
    exists(on_node3(&reader)).await.expect("the reader reads");

    admin.user_revoke_role("reader", "reader-role").await.expect("revoke");
    let e = exists(on_node3(&reader)).await.expect_err("revoked");
    assert!(matches!(e, handlestore_client::Error::PermissionDenied(_)), "{e:?}");
    admin
        .user_grant_role("reader", "reader-role")
        .await
        .expect("grant again");
    exists(on_node3(&reader)).await.expect("granted again");

    let fresh = admin.user_token_rotate("reader").await.expect("rotate");
    let e = exists(on_node3(&reader)).await.expect_err("the old token");
    assert!(matches!(e, handlestore_client::Error::Unauthenticated(_)), "{e:?}");
    exists(on_node3(&fresh)).await.expect("the new token");

    admin.user_remove("reader").await.expect("remove");
    let e = exists(on_node3(&fresh)).await.expect_err("a removed user");
    assert!(matches!(e, handlestore_client::Error::Unauthenticated(_)), "{e:?}");

    // Off again: calls without credentials are served.
    admin.auth_disable().await.expect("disable");
    let anyone = cluster
        .client_builder([cluster.node(3).endpoint()])
        .namespace(NS)
        .build()
        .expect("client");
    let anyone = Client::builder(anyone.endpoints())
        .namespace(NS)
        .build()
        .expect("no token");
    exists(anyone).await.expect("auth is off");
}

/// With client certificates, the certificate's common name is the user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_names_its_user() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = TestTls::make(dir.path(), 3, true).expect("certificates");
    for name in ["alice", "mallory"] {
        tls.add_client(name).expect("client certificate");
    }
    let cluster = TestCluster::builder(3)
        .peer_ports(true)
        .tls(tls.clone())
        .start()
        .await
        .expect("cluster");
    // The cluster's own client shows the certificate of `root`: once auth
    // is on, that is the user root.
    let admin = cluster.client();
    admin.auth_enable().await.expect("enable");
    admin.role_add("alices").await.expect("role");
    admin
        .role_grant("alices", grant(NS, Access::Write))
        .await
        .expect("grant");
    let none = admin.user_add("alice", &["alices".into()], true).await.expect("user");
    assert!(none.is_none(), "a certificate-only user gets no token");
    let as_user = |name: &str| {
        Client::builder(cluster.endpoints())
            .tls(tls.client_as(Some(name)))
            .namespace(NS)
            .build()
            .expect("client")
    };
    let status = as_user("alice").auth_status().await.expect("status");
    assert_eq!(status.user, "alice");
    as_user("alice")
        .handle_store::<serde_json::Value>("cart")
        .build()
        .mint(serde_json::json!({}), Ttl::Never)
        .await
        .expect("alice writes a");
    let e = as_user("mallory")
        .handle_store::<serde_json::Value>("cart")
        .build()
        .len()
        .await
        .expect_err("mallory is no user");
    assert!(matches!(e, handlestore_client::Error::Unauthenticated(_)), "{e:?}");
    admin.auth_disable().await.expect("disable");
}

/// An owner-bound store: a handle minted by one user is not there for
/// another (NOT_FOUND on get, put and delete, nothing changed), while an
/// admin of the namespace sees it; counting the store needs admin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_bound_handles_are_invisible_to_other_users() {
    let (cluster, tokens) = cluster_with_users().await;
    let admin = cluster.client();
    let second = owner_bound_carts_and_a_second_writer(&admin).await;
    let token = |u: &str| tokens.iter().find(|(n, _)| n == u).map(|(_, t)| t.clone()).expect(u);
    let carts = |t: &str| {
        client_as(&cluster, Some(t), NS)
            .handle_store::<serde_json::Value>("cart")
            .build()
    };
    let mine = carts(&token("writer"));
    let theirs = carts(&second);
    let id = mine
        .mint(serde_json::json!({"items": 1}), Ttl::Never)
        .await
        .expect("mint");

    assert_eq!(
        theirs.get(&id).await.expect("get"),
        None,
        "another user's handle is not there"
    );
    let e = theirs
        .put(&id, serde_json::json!({"items": 99}), Ttl::Never)
        .await
        .expect_err("put over another user's handle");
    assert!(matches!(e, handlestore_client::Error::NotFound(_)), "{e:?}");
    assert!(
        !theirs.delete(&id).await.expect("delete"),
        "nothing was there to delete"
    );
    assert_eq!(
        mine.get(&id).await.expect("get"),
        Some(serde_json::json!({"items": 1})),
        "the owner's handle is unchanged"
    );
    let e = theirs.len().await.expect_err("counting an owner-bound store");
    assert!(matches!(e, handlestore_client::Error::PermissionDenied(_)), "{e:?}");
    let ns_admin = carts(&token("nsadmin"));
    assert!(
        ns_admin.get(&id).await.expect("get").is_some(),
        "an admin sees every owner"
    );
    assert_eq!(ns_admin.len().await.expect("len"), 1);
    mine.put(&id, serde_json::json!({"items": 2}), Ttl::Never)
        .await
        .expect("the owner writes");
    assert!(mine.delete(&id).await.expect("the owner deletes"));
}

/// Watches deliver only what their caller may read: another user's
/// handles in an owner-bound store, and keys outside a narrowed grant,
/// never arrive; a watch ends with PERMISSION_DENIED once its grant is
/// revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_deliver_only_what_the_caller_may_read() {
    async fn next(w: &mut handlestore_client::Watch) -> handlestore_client::Result<handlestore_client::WatchBatch> {
        tokio::time::timeout(Duration::from_secs(20), w.next())
            .await
            .expect("in time")
    }
    use handlestore_client::{WatchOptions, WatchTarget};
    let (cluster, tokens) = cluster_with_users().await;
    let admin = cluster.client().with_namespace(NS).expect("ns");
    let second = owner_bound_carts_and_a_second_writer(&admin).await;
    let (narrow, narrow_token) = a_drafts_reader(&admin).await;
    let writer = tokens
        .iter()
        .find(|(n, _)| n == "writer")
        .map(|(_, t)| t.clone())
        .expect("writer");
    let as_user = |t: &str| client_as(&cluster, Some(t), NS);
    let watch = |c: Client, target: WatchTarget| async move { c.watch(target, WatchOptions::default()).await };

    let mut theirs = watch(as_user(&second), WatchTarget::store("cart"))
        .await
        .expect("watch");
    let mut keys = watch(as_user(&narrow_token), WatchTarget::prefix(""))
        .await
        .expect("watch");
    let e = watch(as_user(&narrow_token), WatchTarget::prefix("other/")).await.err();
    assert!(
        matches!(e, Some(handlestore_client::Error::PermissionDenied(_))),
        "{e:?}"
    );

    let carts = |t: &str| as_user(t).handle_store::<serde_json::Value>("cart").build();
    carts(&writer)
        .mint(serde_json::json!(1), Ttl::Never)
        .await
        .expect("mine");
    let own = carts(&second)
        .mint(serde_json::json!(2), Ttl::Never)
        .await
        .expect("theirs");
    let kv = admin.state_tool();
    kv.store(
        "other/1",
        StateValue::Json(serde_json::json!(1)),
        StoreOptions::default(),
    )
    .await
    .expect("store");
    kv.store(
        "drafts/1",
        StateValue::Json(serde_json::json!(1)),
        StoreOptions::default(),
    )
    .await
    .expect("store");
    let b = next(&mut theirs).await.expect("their batch");
    assert_eq!(
        b.changes.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
        [own.as_str()]
    );
    let b = next(&mut keys).await.expect("a batch");
    assert_eq!(
        b.changes.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
        ["drafts/1"]
    );

    admin.role_revoke("drafts", narrow).await.expect("revoke");
    kv.store(
        "drafts/2",
        StateValue::Json(serde_json::json!(2)),
        StoreOptions::default(),
    )
    .await
    .expect("store");
    let e = next(&mut keys).await.expect_err("the grant is gone");
    assert!(matches!(e, handlestore_client::Error::PermissionDenied(_)), "{e:?}");
}

/// Watchers that may see every change their target matches share the
/// responses a node builds for them (`api::watch::memo`); watchers of the
/// same targets on the same node that may see less never get those: on
/// every node, root's watches hear everything, a reader granted `drafts/`
/// only its keys, and a writer of an owner-bound store only its handles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_watch_responses_reach_only_watchers_that_may_see_all() {
    use handlestore_client::{Watch, WatchOptions, WatchTarget};
    async fn keys_until(w: &mut Watch, n: usize) -> Vec<String> {
        let mut keys = handlestore_tests::keys_heard(w, n).await;
        keys.sort();
        keys
    }
    let (cluster, _) = cluster_with_users().await;
    let admin = cluster.client().with_namespace(NS).expect("ns");
    let second = owner_bound_carts_and_a_second_writer(&admin).await;
    let (_, drafts) = a_drafts_reader(&admin).await;
    let mut watches = Vec::new();
    for id in 1..=3 {
        let on_node = |token: Option<&str>| {
            let mut b = cluster.client_builder([cluster.node(id).endpoint()]).namespace(NS);
            if let Some(t) = token {
                b = b.token(t);
            }
            b.build().expect("client")
        };
        let watch = |c: Client, target: WatchTarget| async move {
            c.watch(target, WatchOptions::default()).await.expect("watch")
        };
        // Root's first: whichever builds a batch's responses first, the
        // narrower watcher must build its own.
        watches.push((
            watch(on_node(None), WatchTarget::prefix("")).await,
            watch(on_node(Some(&drafts)), WatchTarget::prefix("")).await,
            watch(on_node(None), WatchTarget::store("cart")).await,
            watch(on_node(Some(&second)), WatchTarget::store("cart")).await,
        ));
    }
    let kv = admin.state_tool();
    for key in ["other/1", "drafts/1"] {
        let value = StateValue::Json(serde_json::json!(1));
        kv.store(key, value, StoreOptions::default()).await.expect("store");
    }
    let carts = |c: &Client| c.handle_store::<serde_json::Value>("cart").build();
    let roots = carts(&admin)
        .mint(serde_json::json!(1), Ttl::Never)
        .await
        .expect("root's");
    let writer2 = client_as(&cluster, Some(&second), NS);
    let theirs = carts(&writer2)
        .mint(serde_json::json!(2), Ttl::Never)
        .await
        .expect("theirs");
    let mut both = vec![roots.as_str().to_owned(), theirs.as_str().to_owned()];
    both.sort();
    for (root_keys, narrow_keys, root_carts, their_carts) in &mut watches {
        assert_eq!(keys_until(root_keys, 2).await, ["drafts/1", "other/1"]);
        assert_eq!(keys_until(narrow_keys, 1).await, ["drafts/1"]);
        assert_eq!(keys_until(root_carts, 2).await, both);
        assert_eq!(keys_until(their_carts, 1).await, [theirs.as_str()]);
    }
}

/// Adds user "narrow", who may read NS's state keys under `drafts/`: its
/// grant and its token.
async fn a_drafts_reader(admin: &Client) -> (Permission, String) {
    let narrow = Permission {
        key_prefix: "drafts/".into(),
        ..grant(NS, Access::Read)
    };
    admin.role_add("drafts").await.expect("role");
    admin.role_grant("drafts", narrow.clone()).await.expect("grant");
    let token = admin
        .user_add("narrow", &["drafts".into()], false)
        .await
        .expect("user")
        .expect("token");
    (narrow, token)
}

/// Makes store "cart" of NS owner-bound and adds user "writer2" with the
/// writer's role; returns writer2's token.
async fn owner_bound_carts_and_a_second_writer(admin: &Client) -> String {
    let policy = handlestore_client::auth::NamespacePolicy {
        name: NS.into(),
        owner_bound_stores: vec!["cart".into()],
        ..Default::default()
    };
    admin.namespace_set(policy).await.expect("policy");
    admin
        .user_add("writer2", &["writer-role".into()], false)
        .await
        .expect("user")
        .expect("token")
}

/// Quotas: a write that would pass a namespace's entries or bytes gets
/// RESOURCE_EXHAUSTED and writes nothing; usage shows in status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_over_quota_is_refused_and_changes_nothing() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let admin = cluster.client();
    let set = |name: &str, max_entries: u64, max_bytes: u64| handlestore_client::auth::NamespacePolicy {
        name: name.into(),
        max_entries,
        max_bytes,
        ..Default::default()
    };
    admin.namespace_set(set("q", 3, 0)).await.expect("policy");
    admin.namespace_set(set("qb", 0, 200)).await.expect("policy");
    let q = admin.with_namespace("q").expect("q").state_tool();
    let value = |n: usize| StateValue::Bytes(vec![7u8; n]);
    for k in ["k1", "k2", "k3"] {
        q.store(k, value(10), StoreOptions::default())
            .await
            .expect("under the quota");
    }
    let exhausted = |e: handlestore_client::Error| {
        matches!(
            e,
            handlestore_client::Error::ResourceExhausted {
                reason: Some(handlestore_client::Reason::Quota),
                ..
            }
        )
    };
    assert!(exhausted(
        q.store("k4", value(10), StoreOptions::default())
            .await
            .expect_err("a 4th entry")
    ));
    assert!(!q.exists("k4").await.expect("exists"), "nothing was written");
    q.store("k1", value(20), StoreOptions::default())
        .await
        .expect("replacing one is no new entry");
    let batch = vec![
        handlestore_client::StoreItem::new("k5", value(1)),
        handlestore_client::StoreItem::new("k6", value(1)),
    ];
    assert!(exhausted(
        q.batch_store(batch).await.expect_err("a batch over the quota")
    ));
    assert!(!q.exists("k5").await.expect("exists"), "the batch wrote nothing");
    q.delete("k2", Default::default()).await.expect("delete");
    q.store("k4", value(10), StoreOptions::default())
        .await
        .expect("room again");

    let qb = admin.with_namespace("qb").expect("qb");
    let carts = qb.handle_store::<serde_json::Value>("cart").build();
    let big = serde_json::json!("x".repeat(100));
    carts.mint(big.clone(), Ttl::Never).await.expect("under the byte quota");
    let e = carts.mint(big, Ttl::Never).await.expect_err("over the byte quota");
    assert!(exhausted(e));
    assert_eq!(carts.len().await.expect("len"), 1);

    let status = cluster.status(1).await.expect("status");
    let usage = |n: &str| status.namespaces.iter().find(|u| u.name == n).cloned().expect(n);
    assert_eq!(usage("q").entries, 3);
    assert_eq!(usage("q").policy.expect("policy").max_entries, 3);
    assert_eq!(usage("qb").entries, 1);
}

/// Every way a secret could be written out: as text, and the bytes of a
/// key-ring secret in hex, base64, base32 and as a debug byte list.
fn renderings(secret: &[u8]) -> Vec<String> {
    use data_encoding::{BASE32_NOPAD, BASE64, BASE64_NOPAD, HEXLOWER, HEXUPPER};
    vec![
        HEXLOWER.encode(secret),
        HEXUPPER.encode(secret),
        BASE64.encode(secret),
        BASE64_NOPAD.encode(secret),
        BASE32_NOPAD.encode(secret),
        format!("{secret:?}"),
    ]
}

/// No token, token secret or key-ring secret appears in any node's log,
/// with every node logging at trace level through a full run (auth on,
/// users, rotations, failed logins, key ring made and read, writes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_log_at_any_level() {
    let mut builder = TestCluster::builder(3);
    for id in 1..=3 {
        builder = builder.node_env(id, "RUST_LOG", "trace");
    }
    let mut cluster = builder.start().await.expect("cluster");
    let root = cluster.client().auth_enable().await.expect("enable").expect("token");
    cluster.set_token(Some(root.clone()));
    let admin = cluster.client();
    admin.role_add("codec").await.expect("role");
    admin
        .role_grant("codec", grant(NS, Access::Admin))
        .await
        .expect("grant");
    let first = admin
        .user_add("svc", &["codec".into()], false)
        .await
        .expect("user")
        .expect("token");
    let second = admin.user_token_rotate("svc").await.expect("rotate");
    let svc = client_as(&cluster, Some(&second), NS);
    svc.keyring_rotate(true).await.expect("key ring");
    svc.keyring_rotate(false).await.expect("rotate the ring");
    let ring = svc.keyring(true).await.expect("secrets");
    let wrong = client_as(&cluster, Some(&first), NS);
    wrong.keyring(true).await.expect_err("the old token");
    let carts = svc.handle_store::<serde_json::Value>("cart").build();
    let id = carts
        .mint(serde_json::json!({"sku": 1}), Ttl::Never)
        .await
        .expect("mint");
    carts.get(&id).await.expect("get");
    // Let the followers apply and log what they do.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut secrets: Vec<String> = Vec::new();
    for t in [&root, &first, &second] {
        secrets.push(t.clone());
        // The secret part alone, too.
        secrets.push(t.rsplit('_').next().expect("secret part").to_string());
    }
    for k in &ring {
        assert_eq!(k.secret.len(), 32, "the ring's secrets were read");
        secrets.extend(renderings(&k.secret));
    }
    for node in 1..=3 {
        let log = cluster.log(node);
        assert!(log.lines().count() > 100, "node {node} logged at trace level");
        for s in &secrets {
            assert!(
                !log.contains(s.as_str()),
                "node {node}'s log holds a secret ({} chars)",
                s.len()
            );
        }
    }
}

/// `handlestore auth enable --root-token-file F`, as a one-shot setup step (the
/// Compose file's `auth` service) runs it: the first run turns auth on and
/// keeps root's token in F (owner-only, never printed); later runs check F
/// and change nothing; a file without root's token fails. Commands then
/// take the token from the file (`--token-file`, `HANDLESTORE_TOKEN_FILE`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_enable_keeps_roots_token_in_a_file_and_is_idempotent() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("root.token");
    let cli = |args: &[&str], env: Option<(&str, &std::path::Path)>| {
        let mut c = std::process::Command::new(handlestore_tests::handlestore_bin());
        c.args(args).arg("--endpoints").arg(cluster.endpoints().join(","));
        c.env_remove("HANDLESTORE_TOKEN").env_remove("HANDLESTORE_TOKEN_FILE");
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        c.output().expect("run handlestore")
    };
    let file_arg = file.to_str().expect("path");
    let first = cli(&["auth", "enable", "--root-token-file", file_arg], None);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let token = std::fs::read_to_string(&file).expect("the token file");
    let token = token.trim();
    assert!(token.starts_with("hs1_"), "a token is kept");
    assert!(
        !String::from_utf8_lossy(&first.stdout).contains(token),
        "the token is not printed"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).expect("meta").permissions());
    assert_eq!(mode & 0o077, 0, "owner-only");
    assert!(
        client_as(&cluster, None, NS)
            .auth_status()
            .await
            .expect("status")
            .enabled
    );

    let again = cli(&["auth", "enable", "--root-token-file", file_arg], None);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(std::fs::read_to_string(&file).expect("file").trim(), token, "kept");

    let status = cli(&["auth", "status"], Some(("HANDLESTORE_TOKEN_FILE", &file)));
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("you are: root"),
        "{}{}",
        String::from_utf8_lossy(&status.stdout),
        String::from_utf8_lossy(&status.stderr)
    );

    let wrong = dir.path().join("wrong.token");
    std::fs::write(
        &wrong,
        "hs1_aaaaaaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n",
    )
    .expect("write");
    let refused = cli(
        &["auth", "enable", "--root-token-file", wrong.to_str().expect("path")],
        None,
    );
    assert!(!refused.status.success(), "a file without root's token");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("does not hold root's token"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let missing = cli(&["auth", "status", "--token-file", "/nonexistent/token"], None);
    assert_eq!(missing.status.code(), Some(2), "a missing token file is a usage error");
}
