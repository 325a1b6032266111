//! Where the request being served was forwarded: the write path notes
//! the leader it forwarded to, and the client port's middleware
//! ([`server::leader_header`](crate::server::leader_header)) names that leader on the answer, so a client
//! sends its next call there instead of paying the extra hop on every
//! write.

use std::cell::Cell;

tokio::task_local! {
    /// Where the request being served was forwarded, if it was.
    static FORWARDED_TO: Cell<Option<String>>;
}

/// Notes that the request being served was forwarded to the leader at
/// `addr`. Outside [`watching`] this does nothing.
pub fn note(addr: &str) {
    let _ = FORWARDED_TO.try_with(|cell| cell.set(Some(addr.to_string())));
}

/// Runs `request`, and says where it was forwarded, if it was.
pub async fn watching<F: Future>(request: F) -> (F::Output, Option<String>) {
    let served = FORWARDED_TO.scope(Cell::new(None), request);
    tokio::pin!(served);
    let out = (&mut served).await;
    let to = served.as_mut().take_value().and_then(Cell::into_inner);
    (out, to)
}
