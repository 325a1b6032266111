//! A follower's write side of a connection: answers written from whichever
//! thread learns they may leave.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{mpsc, oneshot};

use crate::raft::log::durability::Held;

/// Bytes to write, and where to say whether all of them were.
type Outgoing = (Vec<u8>, oneshot::Sender<bool>);

/// Where a connection's answers go.
pub enum Writer {
    /// A plain socket, written in place by non-blocking writes from any
    /// thread (what the socket cannot take at once goes to a task).
    Tcp(Arc<OwnedWriteHalf>),
    /// A TLS stream, which only async code can write: a task of its own
    /// writes what it is sent, in order, and closes the stream when the
    /// last sender is gone.
    Task(mpsc::UnboundedSender<Outgoing>),
}

impl Writer {
    pub fn tcp(w: OwnedWriteHalf) -> Self {
        Writer::Tcp(Arc::new(w))
    }

    /// A writer task for `w`, on this runtime.
    pub fn task<W: AsyncWrite + Send + Unpin + 'static>(mut w: W) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
        tokio::spawn(async move {
            while let Some((bytes, done)) = rx.recv().await {
                let written = w.write_all(&bytes).await.and(w.flush().await);
                if let Err(e) = &written {
                    tracing::debug!("Raft wire: writing an answer: {e}");
                }
                let _ = done.send(written.is_ok());
                if written.is_err() {
                    return;
                }
            }
            let _ = w.shutdown().await;
        });
        Writer::Task(tx)
    }

    /// A job that writes `bytes` from any thread, and what it came to: true
    /// once all of it is written, false if the connection failed (or the
    /// job was dropped unrun). The job lets go of the socket before it
    /// reports.
    pub fn job(&self, bytes: Vec<u8>) -> (Held, oneshot::Receiver<bool>) {
        let (tx, rx) = oneshot::channel();
        let job: Held = match self {
            Writer::Tcp(w) => {
                let (w, runtime) = (w.clone(), tokio::runtime::Handle::current());
                Box::new(move || write_now(w, bytes, tx, runtime))
            }
            Writer::Task(sender) => {
                let sender = sender.clone();
                Box::new(move || {
                    // A failed send drops `tx`: the receiver sees false.
                    let _ = sender.send((bytes, tx));
                })
            }
        };
        (job, rx)
    }

    /// Writes `bytes` now; whether all of them were written.
    pub async fn write(&self, bytes: Vec<u8>) -> bool {
        let (job, written) = self.job(bytes);
        job();
        matches!(written.await, Ok(true))
    }

    /// Writes a last frame and closes the connection. Every answer before
    /// it must be out (no job may hold the socket any more).
    pub async fn close_with(self, bytes: Vec<u8>) {
        match self {
            Writer::Tcp(w) => {
                if let Ok(mut w) = Arc::try_unwrap(w) {
                    let _ = w.write_all(&bytes).await;
                    let _ = w.shutdown().await;
                }
            }
            task @ Writer::Task(_) => {
                task.write(bytes).await;
            }
        }
    }
}

/// Writes `bytes` to `w` without waiting; the rest, if the socket is full,
/// from a task on `runtime`.
fn write_now(w: Arc<OwnedWriteHalf>, bytes: Vec<u8>, done: oneshot::Sender<bool>, runtime: tokio::runtime::Handle) {
    let at = match w.try_write(&bytes) {
        Ok(n) if n == bytes.len() => {
            drop(w);
            let _ = done.send(true);
            return;
        }
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
        Err(e) => {
            tracing::debug!("Raft wire: writing an answer: {e}");
            drop(w);
            let _ = done.send(false);
            return;
        }
    };
    runtime.spawn(async move {
        let written = write_rest(&w, &bytes[at..]).await;
        drop(w);
        let _ = done.send(written);
    });
}

async fn write_rest(w: &OwnedWriteHalf, mut rest: &[u8]) -> bool {
    while !rest.is_empty() {
        if w.writable().await.is_err() {
            return false;
        }
        match w.try_write(rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                tracing::debug!("Raft wire: writing an answer: {e}");
                return false;
            }
        }
    }
    true
}
