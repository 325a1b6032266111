//! The principal of the request being served: set by
//! [`super::BindSessions`] around the rmcp service, read by the session
//! store. rmcp calls its session store inline while it serves a request,
//! so a task-local reaches the store without a seam rmcp lacks.

use std::future::Future;

tokio::task_local! {
    static PRINCIPAL: Option<String>;
}

/// Runs `fut` with `principal` as the current principal.
pub async fn scope<F: Future>(principal: Option<String>, fut: F) -> F::Output {
    PRINCIPAL.scope(principal, fut).await
}

/// The current principal; `None` outside [`scope`] or without one.
pub fn current() -> Option<String> {
    PRINCIPAL.try_with(Clone::clone).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_principal_is_seen_inside_its_scope_only() {
        assert_eq!(current(), None);
        let inside = scope(Some("alice".into()), async { current() }).await;
        assert_eq!(inside.as_deref(), Some("alice"));
        assert_eq!(scope(None, async { current() }).await, None);
        assert_eq!(current(), None);
    }
}
