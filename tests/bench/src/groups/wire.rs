//! The peer wire: one TCP connection per ordered node pair carries every
//! group's calls. A frame is a 4-byte length, a kind, the group id, the
//! call id and a postcard body; answers come back on the same connection
//! and are matched by call id, so calls of different groups interleave.
//! A connection's writer puts every frame queued since its last write
//! into one socket write (heartbeats of all groups to one node leave
//! together).

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use super::Raft;

pub const APPEND: u8 = 1;
pub const VOTE: u8 = 2;
const ANSWER: u8 = 3;
/// Kind, group id, call id.
const HEAD: usize = 1 + 4 + 8;
const MAX_FRAME: usize = 64 << 20;

/// Every group's Raft on a node, by group id.
pub type Groups = Arc<RwLock<HashMap<u32, Raft>>>;

/// What a node sent on the wire: frames and bytes, and socket writes.
#[derive(Default, Debug)]
pub struct Traffic {
    pub frames: AtomicU64,
    pub bytes: AtomicU64,
    pub writes: AtomicU64,
}

struct Frame {
    kind: u8,
    gid: u32,
    call: u64,
    body: Vec<u8>,
}

fn encode(kind: u8, gid: u32, call: u64, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(4 + HEAD + body.len());
    f.extend_from_slice(&((HEAD + body.len()) as u32).to_be_bytes());
    f.push(kind);
    f.extend_from_slice(&gid.to_be_bytes());
    f.extend_from_slice(&call.to_be_bytes());
    f.extend_from_slice(body);
    f
}

async fn read_frame(r: &mut (impl AsyncReadExt + Unpin)) -> io::Result<Option<Frame>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if !(HEAD..=MAX_FRAME).contains(&len) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes"),
        ));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    let body = buf.split_off(HEAD);
    Ok(Some(Frame {
        kind: buf[0],
        gid: u32::from_be_bytes(buf[1..5].try_into().expect("4 bytes")),
        call: u64::from_be_bytes(buf[5..13].try_into().expect("8 bytes")),
        body,
    }))
}

/// A connection's writer: every frame queued since its last write, in
/// one write.
fn spawn_writer(mut w: OwnedWriteHalf, traffic: Arc<Traffic>) -> mpsc::UnboundedSender<Vec<u8>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut buf = first;
            let mut frames = 1;
            while let Ok(more) = rx.try_recv() {
                buf.extend_from_slice(&more);
                frames += 1;
            }
            traffic.frames.fetch_add(frames, Ordering::Relaxed);
            traffic.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
            traffic.writes.fetch_add(1, Ordering::Relaxed);
            if w.write_all(&buf).await.is_err() {
                return;
            }
        }
    });
    tx
}

/// The calling side of a connection to one peer.
pub struct Peer {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Vec<u8>>>>>,
    next: AtomicU64,
}

impl Peer {
    pub async fn connect(addr: std::net::SocketAddr, traffic: Arc<Traffic>) -> io::Result<Arc<Self>> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (r, w) = stream.into_split();
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Vec<u8>>>>> = Arc::default();
        let answers = pending.clone();
        tokio::spawn(async move {
            let mut r = BufReader::new(r);
            while let Ok(Some(f)) = read_frame(&mut r).await {
                let waiting = answers.lock().unwrap_or_else(|p| p.into_inner()).remove(&f.call);
                if let Some(tx) = waiting {
                    let _ = tx.send(f.body);
                }
            }
        });
        Ok(Arc::new(Self {
            tx: spawn_writer(w, traffic),
            pending,
            next: AtomicU64::new(1),
        }))
    }

    /// Sends a call of group `gid` and waits up to `ttl` for its answer.
    pub async fn call(&self, kind: u8, gid: u32, body: &[u8], ttl: Duration) -> io::Result<Vec<u8>> {
        let call = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(call, tx);
        let forget = || {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&call);
        };
        if self.tx.send(encode(kind, gid, call, body)).is_err() {
            forget();
            return Err(io::Error::other("the connection closed"));
        }
        match tokio::time::timeout(ttl, rx).await {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(_)) => {
                forget();
                Err(io::Error::other("the connection closed"))
            }
            Err(_) => {
                forget();
                Err(io::Error::other("no answer in time"))
            }
        }
    }
}

/// Serves peers' calls to this node's groups, until the process ends.
pub async fn serve(listener: TcpListener, groups: Groups, traffic: Arc<Traffic>) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let (r, w) = stream.into_split();
        let tx = spawn_writer(w, traffic.clone());
        let groups = groups.clone();
        tokio::spawn(async move {
            let mut r = BufReader::new(r);
            while let Ok(Some(f)) = read_frame(&mut r).await {
                let raft = groups.read().unwrap_or_else(|p| p.into_inner()).get(&f.gid).cloned();
                let (Some(raft), tx) = (raft, tx.clone()) else { continue };
                tokio::spawn(async move {
                    if let Some(body) = answer(&raft, f.kind, &f.body).await {
                        let _ = tx.send(encode(ANSWER, f.gid, f.call, &body));
                    }
                });
            }
        });
    }
}

/// Runs one call on `raft`; its answer's body, or None for a call that
/// does not decode (it is left unanswered: the caller times out).
async fn answer(raft: &Raft, kind: u8, body: &[u8]) -> Option<Vec<u8>> {
    match kind {
        APPEND => {
            let rpc = postcard::from_bytes(body).ok()?;
            postcard::to_allocvec(&raft.append_entries(rpc).await).ok()
        }
        VOTE => {
            let rpc = postcard::from_bytes(body).ok()?;
            postcard::to_allocvec(&raft.vote(rpc).await).ok()
        }
        _ => None,
    }
}
