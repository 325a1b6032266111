//! Bearer tokens: `hs1_<id>_<secret>`, where the id (80 random bits) is
//! public and names the token in the replicated state, and the secret (256
//! random bits) is stored only as its SHA-256 digest. A token is checked
//! by looking its id up and comparing digests in constant time.

use data_encoding::BASE32_NOPAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const PREFIX: &str = "hs1_";
const ID_BYTES: usize = 10;
const SECRET_BYTES: usize = 32;

/// A token just made: shown once to its user; only `id` and `digest` are
/// kept.
pub struct NewToken {
    pub token: String,
    pub id: String,
    pub digest: Vec<u8>,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Draws a new token from the OS CSPRNG.
pub fn generate() -> NewToken {
    let id: [u8; ID_BYTES] = rand::random();
    let secret: [u8; SECRET_BYTES] = rand::random();
    let id = BASE32_NOPAD.encode(&id);
    let token = format!("{PREFIX}{id}_{}", BASE32_NOPAD.encode(&secret));
    NewToken {
        token,
        id,
        digest: digest(&secret),
    }
}

/// A token its caller made (a Kubernetes Secret, which no node can write),
/// to be kept as one made here is: its id and digest only (`token` is
/// left empty, never echoed). None if it is not one of ours.
pub fn adopt(token: &str) -> Option<NewToken> {
    let p = parse(token)?;
    let digest = digest(&p.secret);
    Some(NewToken {
        token: String::new(),
        id: p.id,
        digest,
    })
}

impl NewToken {
    /// Whether this is the token stored as `id` and `stored_digest`
    /// (digests compared in constant time).
    pub fn is(&self, id: &str, stored_digest: &[u8]) -> bool {
        self.id == id && bool::from(self.digest.ct_eq(stored_digest))
    }
}

/// A presented token, split into its public id and its secret.
pub struct Presented {
    pub id: String,
    secret: Vec<u8>,
}

/// Splits a presented token; None if it is not one of ours.
pub fn parse(token: &str) -> Option<Presented> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let raw_id = BASE32_NOPAD.decode(id.as_bytes()).ok()?;
    let secret = BASE32_NOPAD.decode(secret.as_bytes()).ok()?;
    (raw_id.len() == ID_BYTES && secret.len() == SECRET_BYTES).then(|| Presented {
        id: id.to_string(),
        secret,
    })
}

impl Presented {
    /// Whether this token's secret has the stored digest (constant time).
    pub fn matches(&self, stored_digest: &[u8]) -> bool {
        bool::from(digest(&self.secret).ct_eq(stored_digest))
    }
}

fn digest(secret: &[u8]) -> Vec<u8> {
    Sha256::digest(secret).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_its_digest_and_nothing_else() {
        let t = generate();
        let p = parse(&t.token).expect("parses");
        assert_eq!(p.id, t.id);
        assert!(p.matches(&t.digest));
        let other = generate();
        assert!(!p.matches(&other.digest));
        assert!(!p.matches(&[]), "a missing digest matches nothing");
        assert!(!format!("{t:?}").contains(&t.token[10..]), "Debug hides the token");
    }

    #[test]
    fn an_adopted_token_is_kept_as_one_made_here() {
        let made = generate();
        let adopted = adopt(&made.token).expect("a token of ours is adopted");
        assert_eq!((adopted.id.as_str(), &adopted.digest), (made.id.as_str(), &made.digest));
        assert!(adopted.token.is_empty(), "the text is not kept");
        assert!(adopted.is(&made.id, &made.digest));
        assert!(!adopted.is(&made.id, &generate().digest));
        assert!(!adopted.is(&generate().id, &made.digest));
        // As the Helm chart makes one: base32 of 10 and 32 random bytes.
        let helm = "hs1_MZXW6YTBOI4DCMJR_AEBAGBAFAYDQQCIKBMGA2DQPCAIREEYUCULBOGAZDINRYHI6D4QA";
        assert!(adopt(helm).is_some(), "{helm}");
        for bad in ["", "hs1_", &made.token[..made.token.len() - 1], "hs1_AAAA_BBBB"] {
            assert!(adopt(bad).is_none(), "{bad:?} adopted");
        }
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        let t = generate().token;
        for bad in [
            "",
            "hs1_",
            "Bearer x",
            &t[..t.len() - 1],
            &t.replace("hs1_", "hs2_"),
            &format!("{t}A"),
            &t.to_lowercase(),
        ] {
            assert!(parse(bad).is_none(), "{bad:?} parsed");
        }
    }
}
