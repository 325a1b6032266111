//! The request-state key ring of a namespace, as the state machine keeps
//! it: keys drawn by the leader inside the replicated command, rotated
//! (the old primary keeps verifying) and retired.

use handlestore_proto::internal::v1 as ipb;
use prost::Message;

use super::{Tx, fail, ok};
use crate::state::{Record, Result, decode, keys};

/// Most keys one namespace's key ring holds.
const MAX_RING_KEYS: usize = 64;

impl Tx<'_> {
    /// The keys of a namespace's ring, as this batch sees them.
    fn ring(&mut self, ns: &str) -> Result<Vec<(Vec<u8>, ipb::KeyRecord)>> {
        let (entries, _) = self.range(&keys::keyring_prefix(ns), MAX_RING_KEYS)?;
        entries
            .into_iter()
            .map(|(k, rec)| Ok((k, decode::<ipb::KeyRecord>(&rec.value, "keyring")?)))
            .collect()
    }

    fn put_ring_key(&mut self, index: u64, key: Vec<u8>, k: &ipb::KeyRecord, old: Option<&Record>) {
        let rec = Record {
            value: k.encode_to_vec(),
            create_revision: old.map(|r| r.create_revision).unwrap_or(index),
            mod_revision: index,
            ..Default::default()
        };
        self.put_record(key, rec, old);
    }

    /// A new primary key; the old primary keeps verifying (state active).
    pub(super) fn keyring_rotate(&mut self, index: u64, r: ipb::KeyringRotate) -> Result<ipb::CommandResult> {
        if r.secret.len() < 32 {
            return Ok(fail(ipb::ResultCode::ResultInvalid, "key secrets are 32 bytes"));
        }
        let ring = self.ring(&r.namespace)?;
        if r.create_only && !ring.is_empty() {
            return Ok(fail(
                ipb::ResultCode::ResultAlreadyExists,
                format!("namespace {} already has a key ring; use rotate", r.namespace),
            ));
        }
        if ring.len() >= MAX_RING_KEYS {
            return Ok(fail(
                ipb::ResultCode::ResultPrecondition,
                format!("the key ring holds {MAX_RING_KEYS} keys; retire old ones first"),
            ));
        }
        for (key, mut k) in ring {
            if k.state == ipb::KeyState::KeyPrimary as i32 {
                let old = self.get_record(&key)?;
                k.state = ipb::KeyState::KeyActive as i32;
                self.put_ring_key(index, key, &k, old.as_ref());
            }
        }
        let id = format!("k{index}");
        let mut key = keys::keyring_prefix(&r.namespace);
        key.extend_from_slice(id.as_bytes());
        let k = ipb::KeyRecord {
            id: id.clone(),
            secret: r.secret,
            created_ms: self.clock,
            state: ipb::KeyState::KeyPrimary as i32,
        };
        self.put_ring_key(index, key, &k, None);
        Ok(ipb::CommandResult { id, ..ok() })
    }

    pub(super) fn keyring_retire(&mut self, r: ipb::KeyringRetire) -> Result<ipb::CommandResult> {
        let mut key = keys::keyring_prefix(&r.namespace);
        key.extend_from_slice(r.key_id.as_bytes());
        let Some(rec) = self.get_record(&key)? else {
            return Ok(fail(
                ipb::ResultCode::ResultNotFound,
                format!("no key {} in the ring", r.key_id),
            ));
        };
        let k: ipb::KeyRecord = decode(&rec.value, "keyring")?;
        if k.state == ipb::KeyState::KeyPrimary as i32 {
            return Ok(fail(
                ipb::ResultCode::ResultPrecondition,
                format!("key {} is the primary; rotate first, then retire it", r.key_id),
            ));
        }
        self.delete_record(key, &rec);
        Ok(ipb::CommandResult {
            id: r.key_id,
            existed: true,
            ..ok()
        })
    }
}
