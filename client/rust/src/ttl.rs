//! Time to live, with the HandleStore convention.

use std::time::Duration;

/// How long an entry lives.
///
/// On the wire (and in mcpkit's Go API) this is one signed duration:
/// `> 0` expires after it, `0` uses the store's default TTL (whose own `0`
/// means never), `< 0` never expires, whatever the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ttl {
    /// The store's default TTL (never, if the store has none).
    #[default]
    Default,
    /// Never expires, whatever the store's default.
    Never,
    /// Expires this long after the write. A zero duration means `Default`.
    After(Duration),
}

impl Ttl {
    /// The signed-milliseconds form used on the wire.
    pub fn to_millis(self) -> i64 {
        match self {
            Ttl::Default => 0,
            Ttl::Never => -1,
            // Round sub-millisecond TTLs up: they must still expire.
            Ttl::After(d) if d.is_zero() => 0,
            Ttl::After(d) => i64::try_from(d.as_millis().max(1)).unwrap_or(i64::MAX),
        }
    }

    /// Parses the signed-milliseconds form.
    pub fn from_millis(ms: i64) -> Self {
        match ms {
            0 => Ttl::Default,
            n if n < 0 => Ttl::Never,
            n => Ttl::After(Duration::from_millis(n as u64)),
        }
    }

    /// Resolves against a store default: `None` means never expires.
    pub fn resolve(self, default: Option<Duration>) -> Option<Duration> {
        match self {
            Ttl::Never => None,
            Ttl::After(d) if !d.is_zero() => Some(d),
            _ => default.filter(|d| !d.is_zero()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventions() {
        let d = Some(Duration::from_secs(60));
        assert_eq!(Ttl::Default.resolve(d), d);
        assert_eq!(Ttl::Default.resolve(None), None);
        assert_eq!(Ttl::Never.resolve(d), None);
        assert_eq!(
            Ttl::After(Duration::from_secs(1)).resolve(d),
            Some(Duration::from_secs(1))
        );
        assert_eq!(Ttl::After(Duration::ZERO).resolve(d), d);
        for t in [Ttl::Default, Ttl::Never, Ttl::After(Duration::from_millis(5))] {
            assert_eq!(Ttl::from_millis(t.to_millis()), t);
        }
        assert_eq!(Ttl::After(Duration::from_micros(10)).to_millis(), 1);
    }
}
