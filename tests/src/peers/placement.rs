//! Where a peer cluster's members run: all on loopback, each on ports of
//! its own, or each in a network namespace of a [`NetNs`] (member `i` as
//! its node `i + 1`), on the port its project documents, where the
//! network can be cut around one member while clients on the host still
//! reach every one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::Member;
use crate::free_port;
use crate::netns::NetNs;

#[derive(Clone, Copy)]
pub enum Placement<'a> {
    Loopback,
    Namespaces(&'a NetNs),
}

impl Placement<'_> {
    /// Member `i`'s address.
    pub fn host(&self, i: usize) -> String {
        match self {
            Placement::Loopback => "127.0.0.1".to_string(),
            Placement::Namespaces(net) => net.ip(i as u64 + 1),
        }
    }

    /// A port for one of a member's services, `documented` being the one
    /// its project gives (free ports on loopback, where members share an
    /// address).
    pub fn port(&self, documented: u16) -> u16 {
        match self {
            Placement::Loopback => free_port(),
            Placement::Namespaces(_) => documented,
        }
    }

    /// The two addresses (`host:port`) of each of `n` members, for two
    /// services whose documented ports are `documented`.
    pub fn addrs(&self, n: usize, documented: (u16, u16)) -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                let host = self.host(i);
                let (a, b) = (self.port(documented.0), self.port(documented.1));
                (format!("{host}:{a}"), format!("{host}:{b}"))
            })
            .collect()
    }

    /// Starts `bin args...` as member `i`, named `name`, in `dir`.
    pub fn start(&self, dir: &Path, i: usize, name: &str, bin: &Path, args: Vec<OsString>) -> Result<Member> {
        match self {
            Placement::Loopback => Member::start(dir, name, bin, args),
            Placement::Namespaces(net) => {
                let mut wrapped: Vec<OsString> = ["netns", "exec"].map(OsString::from).to_vec();
                wrapped.push(net.ns(i as u64 + 1).into());
                wrapped.push(bin.into());
                wrapped.extend(args);
                // `ip netns exec` execs the program: its pid is the member's.
                Member::start(dir, name, &PathBuf::from("ip"), wrapped)
            }
        }
    }
}
