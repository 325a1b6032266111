//! `RequestStateCodec`: seals MCP request state (SEP-2322 MRTR
//! `requestState`) so that any replica can verify what another issued, with
//! keys from the cluster's replicated key ring.
//!
//! Formats (base64url without padding, `b64`):
//!
//! - signed: `v1.` b64(payload) `.` b64(HMAC-SHA256(mac_key, payload))
//! - encrypted: `v1e.` b64(nonce\[12\] ‖ ciphertext ‖ tag\[16\]), AES-256-GCM
//!   with the bind tag as associated data
//!
//! The payload is `{"s": <state>, "exp": <unix seconds>, "b": <bind tag hex>}`,
//! the bind tag `HMAC-SHA256(mac_key, subject)` or
//! `HMAC-SHA256(mac_key, subject ‖ 0x00 ‖ tool)`. `mac_key` and `aes_key`
//! are derived from each ring key with HKDF-SHA256 (no salt; info
//! `handlestore/request-state/v1/mac` and `.../aes`).
//!
//! Decoding is fail-closed: a bad MAC or tag, an expired blob, another
//! subject or tool, or any malformed input gives `None`, never a panic. It
//! tries every key of the ring (blobs carry no key id), so a blob stays
//! valid across rotations until its key is retired.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::Value;
use sha2::Sha256;

use crate::cluster::Client;
use crate::error::{Error, Result};
use crate::keyring::RingKey;

type HmacSha256 = Hmac<Sha256>;

const SIGNED_PREFIX: &str = "v1.";
const ENCRYPTED_PREFIX: &str = "v1e.";
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// Longest blob decode looks at.
pub const MAX_BLOB_LEN: usize = 64 * 1024;
const B64: data_encoding::Encoding = data_encoding::BASE64URL_NOPAD;

/// Signed (readable, tamper-proof) or encrypted (also confidential).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Signed,
    Encrypted,
}

/// A ring key's derived sub-keys.
struct Derived {
    primary: bool,
    mac: [u8; 32],
    aes: [u8; 32],
}

impl Derived {
    fn new(k: &RingKey) -> Result<Self> {
        if k.secret.len() < 32 {
            return Err(Error::InvalidArgument(format!("key {} has no 32-byte secret", k.id)));
        }
        let hk = Hkdf::<Sha256>::new(None, &k.secret);
        let mut mac = [0u8; 32];
        let mut aes = [0u8; 32];
        hk.expand(b"handlestore/request-state/v1/mac", &mut mac)
            .and_then(|_| hk.expand(b"handlestore/request-state/v1/aes", &mut aes))
            .map_err(|_| Error::Other("HKDF expand failed".into()))?;
        Ok(Self {
            primary: k.primary,
            mac,
            aes,
        })
    }

    fn bind_mac(&self, subject: &str, tool: Option<&str>) -> HmacSha256 {
        // HMAC accepts keys of any length.
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.mac).expect("HMAC takes any key length");
        m.update(subject.as_bytes());
        if let Some(t) = tool {
            m.update(&[0]);
            m.update(t.as_bytes());
        }
        m
    }

    fn bind(&self, subject: &str, tool: Option<&str>) -> String {
        data_encoding::HEXLOWER.encode(&self.bind_mac(subject, tool).finalize().into_bytes())
    }

    fn payload_mac(&self) -> HmacSha256 {
        <HmacSha256 as Mac>::new_from_slice(&self.mac).expect("HMAC takes any key length")
    }
}

#[derive(Serialize)]
struct PayloadOut<'a> {
    s: &'a Value,
    exp: u64,
    b: &'a str,
}

#[derive(serde::Deserialize)]
struct PayloadIn {
    s: Value,
    exp: u64,
    b: String,
}

/// Where the keys come from.
enum Source {
    Static(Arc<Vec<Derived>>),
    Cluster(ClusterRing),
}

struct ClusterRing {
    client: Client,
    cache: RwLock<(Arc<Vec<Derived>>, Instant)>,
    refresh_every: Duration,
}

/// Seals and opens request state with the key ring. Cheap to share
/// (`Arc`); safe to use from many tasks.
pub struct RequestStateCodec {
    mode: Mode,
    source: Source,
    /// With it, a blob opens once in the whole cluster.
    single_use: Option<crate::single_use::SingleUse>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn derive_all(keys: &[RingKey]) -> Result<Vec<Derived>> {
    keys.iter().map(Derived::new).collect()
}

impl RequestStateCodec {
    /// A codec over fixed keys (tests, test vectors, single-process use).
    pub fn with_keys(keys: &[RingKey], mode: Mode) -> Result<Self> {
        Ok(Self {
            mode,
            source: Source::Static(Arc::new(derive_all(keys)?)),
            single_use: None,
        })
    }

    /// A codec over the replicated key ring of `client`'s namespace. The
    /// ring is cached and refreshed every 10 s (see
    /// [`with_refresh_interval`](Self::with_refresh_interval)), and at once
    /// when a blob verifies under no cached key (it may be signed with a key
    /// rotated in since). Fails if the namespace has no ring yet
    /// (`handlestore keyring create`).
    pub async fn from_cluster(client: &Client, mode: Mode) -> Result<Self> {
        let keys = Arc::new(derive_all(&client.keyring(true).await?)?);
        if !keys.iter().any(|k| k.primary) {
            return Err(Error::NotFound(format!(
                "namespace {} has no key ring: run `handlestore keyring create`",
                client.namespace()
            )));
        }
        Ok(Self {
            mode,
            source: Source::Cluster(ClusterRing {
                client: client.clone(),
                cache: RwLock::new((keys, Instant::now())),
                refresh_every: Duration::from_secs(10),
            }),
            single_use: None,
        })
    }

    /// How often a cluster-backed codec re-reads the ring: the longest a
    /// retired key may still verify on this replica.
    pub fn with_refresh_interval(mut self, every: Duration) -> Self {
        if let Source::Cluster(r) = &mut self.source {
            r.refresh_every = every;
        }
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Re-reads the ring from the cluster now (no-op for fixed keys).
    pub async fn refresh(&self) -> Result<()> {
        if let Source::Cluster(r) = &self.source {
            let keys = Arc::new(derive_all(&r.client.keyring(true).await?)?);
            *r.cache.write().unwrap_or_else(|p| p.into_inner()) = (keys, Instant::now());
        }
        Ok(())
    }

    fn keys(&self) -> (Arc<Vec<Derived>>, Option<Instant>) {
        match &self.source {
            Source::Static(k) => (k.clone(), None),
            Source::Cluster(r) => {
                let c = r.cache.read().unwrap_or_else(|p| p.into_inner());
                (c.0.clone(), Some(c.1))
            }
        }
    }

    async fn fresh_keys(&self) -> Arc<Vec<Derived>> {
        if let (Source::Cluster(r), (_, Some(at))) = (&self.source, self.keys())
            && at.elapsed() >= r.refresh_every
            && let Err(e) = self.refresh().await
        {
            tracing::warn!("key ring refresh failed, using the cached ring: {e}");
        }
        self.keys().0
    }

    /// Seals `state` for `subject` (and `tool`), valid for `ttl`.
    pub async fn encode(&self, state: &Value, subject: &str, tool: Option<&str>, ttl: Duration) -> Result<String> {
        let keys = self.fresh_keys().await;
        encode_with(
            &keys,
            self.mode,
            state,
            subject,
            tool,
            now_secs().saturating_add(ttl.as_secs().max(1)),
            None,
        )
    }

    /// Makes every blob single-use across the cluster: `decode` then
    /// opens a blob only the first time, on any replica (SEP-2322's
    /// one-time redemption), and refuses it when the redemption cannot be
    /// recorded (fail closed).
    pub fn with_single_use(mut self, store: crate::single_use::SingleUse) -> Self {
        self.single_use = Some(store);
        self
    }

    /// Opens a blob sealed for `subject` (and `tool`); `None` if it is
    /// forged, tampered with, expired, for someone else, or malformed, and
    /// with [`with_single_use`](Self::with_single_use) if it was opened
    /// before.
    pub async fn decode(&self, blob: &str, subject: &str, tool: Option<&str>) -> Option<Value> {
        let now = now_secs();
        let (value, exp) = self.open(blob, subject, tool, now).await?;
        let Some(single) = &self.single_use else {
            return Some(value);
        };
        let left = Duration::from_secs(exp.saturating_sub(now).saturating_add(1));
        match single.redeem(blob, left).await {
            Ok(true) => Some(value),
            Ok(false) => None,
            Err(e) => {
                tracing::warn!("request state refused: its redemption could not be recorded: {e}");
                None
            }
        }
    }

    /// Opens a blob: its state and expiry.
    async fn open(&self, blob: &str, subject: &str, tool: Option<&str>, now: u64) -> Option<(Value, u64)> {
        // The ring as re-read every refresh interval, so a retired key stops
        // opening here within one interval even on a replica that only opens.
        let keys = self.fresh_keys().await;
        if let Some(v) = open_with(&keys, blob, subject, tool, now) {
            return Some(v);
        }
        let (_, fetched) = self.keys();
        // Maybe sealed with a key newer than our copy of the ring; re-read
        // it (at most once a second) and try again.
        match fetched {
            Some(at) if at.elapsed() >= Duration::from_secs(1) && self.refresh().await.is_ok() => {
                open_with(&self.keys().0, blob, subject, tool, now)
            }
            _ => None,
        }
    }

    /// Deterministic sealing at a given expiry (and nonce, for encrypted
    /// mode): for test vectors.
    pub fn encode_at(
        &self,
        state: &Value,
        subject: &str,
        tool: Option<&str>,
        exp: u64,
        nonce: Option<[u8; 12]>,
    ) -> Result<String> {
        encode_with(&self.keys().0, self.mode, state, subject, tool, exp, nonce)
    }

    /// Opening at a given time (unix seconds): for test vectors.
    pub fn decode_at(&self, blob: &str, subject: &str, tool: Option<&str>, now: u64) -> Option<Value> {
        decode_with(&self.keys().0, blob, subject, tool, now)
    }
}

fn encode_with(
    keys: &[Derived],
    mode: Mode,
    state: &Value,
    subject: &str,
    tool: Option<&str>,
    exp: u64,
    nonce: Option<[u8; 12]>,
) -> Result<String> {
    let key = keys
        .iter()
        .find(|k| k.primary)
        .ok_or_else(|| Error::NotFound("the key ring has no primary key".into()))?;
    let bind = key.bind(subject, tool);
    let payload = serde_json::to_vec(&PayloadOut {
        s: state,
        exp,
        b: &bind,
    })?;
    match mode {
        Mode::Signed => {
            let mut mac = key.payload_mac();
            mac.update(&payload);
            let tag = mac.finalize().into_bytes();
            Ok(format!("{SIGNED_PREFIX}{}.{}", B64.encode(&payload), B64.encode(&tag)))
        }
        Mode::Encrypted => {
            let nonce = nonce.unwrap_or_else(rand::random);
            let cipher = Aes256Gcm::new_from_slice(&key.aes).map_err(|_| Error::Other("AES key".into()))?;
            let ct = cipher
                .encrypt(
                    Nonce::from_slice(&nonce),
                    Payload {
                        msg: &payload,
                        aad: bind.as_bytes(),
                    },
                )
                .map_err(|_| Error::Other("encryption failed".into()))?;
            let mut out = Vec::with_capacity(NONCE_LEN + ct.len());
            out.extend_from_slice(&nonce);
            out.extend_from_slice(&ct);
            Ok(format!("{ENCRYPTED_PREFIX}{}", B64.encode(&out)))
        }
    }
}

/// Checks the opened payload against the expected binding and the clock.
fn accept(key: &Derived, payload: &[u8], subject: &str, tool: Option<&str>, now: u64) -> Option<(Value, u64)> {
    let p: PayloadIn = serde_json::from_slice(payload).ok()?;
    let bind = data_encoding::HEXLOWER.decode(p.b.as_bytes()).ok()?;
    // Constant-time comparison of the binding.
    key.bind_mac(subject, tool).verify_slice(&bind).ok()?;
    (now < p.exp).then_some((p.s, p.exp))
}

fn decode_with(keys: &[Derived], blob: &str, subject: &str, tool: Option<&str>, now: u64) -> Option<Value> {
    open_with(keys, blob, subject, tool, now).map(|(v, _)| v)
}

/// Opens a blob with the first key that verifies it: its state and expiry.
fn open_with(keys: &[Derived], blob: &str, subject: &str, tool: Option<&str>, now: u64) -> Option<(Value, u64)> {
    if blob.len() > MAX_BLOB_LEN {
        return None;
    }
    if let Some(rest) = blob.strip_prefix(ENCRYPTED_PREFIX) {
        let raw = B64.decode(rest.as_bytes()).ok()?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return None;
        }
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        return keys.iter().find_map(|k| {
            let bind = k.bind(subject, tool);
            let cipher = Aes256Gcm::new_from_slice(&k.aes).ok()?;
            let payload = cipher
                .decrypt(
                    Nonce::from_slice(nonce),
                    Payload {
                        msg: ct,
                        aad: bind.as_bytes(),
                    },
                )
                .ok()?;
            accept(k, &payload, subject, tool, now)
        });
    }
    let rest = blob.strip_prefix(SIGNED_PREFIX)?;
    let (payload_b64, tag_b64) = rest.split_once('.')?;
    let payload = B64.decode(payload_b64.as_bytes()).ok()?;
    let tag = B64.decode(tag_b64.as_bytes()).ok()?;
    keys.iter().find_map(|k| {
        let mut mac = k.payload_mac();
        mac.update(&payload);
        mac.verify_slice(&tag).ok()?;
        accept(k, &payload, subject, tool, now)
    })
}
