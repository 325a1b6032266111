//! `linkem`, a link emulator in user space: what `tc qdisc ... netem` does
//! (delay, jitter, loss, reordering), for kernels built without sch_netem.
//! iptables rules send a link's packets to an NFQUEUE (`-j NFQUEUE
//! --queue-num N --queue-bypass`); linkem reads them from that queue, drops
//! each with probability `loss`, and holds the others for `delay ± jitter`
//! before it accepts them. Each packet's hold is drawn on its own, so
//! packets overtake each other whenever the jitter is larger than the gap
//! between them, as under netem; with probability `reorder` a packet is
//! let through at once, ahead of the held ones.
//!
//! Verdicts are issued in any order, by packet id. No packet is held
//! longer than its draw: at most `delay + 4 × jitter`. At most `limit`
//! packets are held (the kernel's queue is bounded to the same length),
//! and beyond that a packet is dropped, as a full qdisc drops it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use rand_distr::Distribution as _;

/// The `linkem` binary (src/bin/linkem.rs), beside the tests' `handlestore`
/// in the target directory; `None` if it is not built.
pub fn bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent()?;
    }
    Some(dir.join("linkem")).filter(|p| p.exists())
}

/// How a packet's hold is drawn around the delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Distribution {
    /// Uniform over `delay - jitter ..= delay + jitter`.
    #[default]
    Uniform,
    /// Normal, with mean `delay` and standard deviation `jitter`, cut at
    /// zero and at `delay + 4 × jitter`.
    Normal,
}

/// A link's impairments, netem's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkParams {
    pub delay: Duration,
    pub jitter: Duration,
    pub distribution: Distribution,
    /// Probability that a packet is dropped (0 to 1).
    pub loss: f64,
    /// Probability that a packet that is not dropped is let through at
    /// once, ahead of the held ones (0 to 1).
    pub reorder: f64,
    /// Packets held at once; netem's `limit` (1000 by default).
    pub limit: usize,
}

impl Default for LinkParams {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            distribution: Distribution::Uniform,
            loss: 0.0,
            reorder: 0.0,
            limit: 1000,
        }
    }
}

impl LinkParams {
    /// The command-line arguments of `linkem` that give these parameters.
    pub fn args(&self) -> Vec<String> {
        let dist = match self.distribution {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
        };
        vec![
            format!("--delay={}ms", self.delay.as_millis()),
            format!("--jitter={}ms", self.jitter.as_millis()),
            format!("--distribution={dist}"),
            format!("--loss={}", self.loss),
            format!("--reorder={}", self.reorder),
            format!("--limit={}", self.limit),
        ]
    }

    /// What happens to the next packet.
    pub fn fate(&self, rng: &mut impl Rng) -> Fate {
        if self.loss > 0.0 && rng.random_bool(self.loss.min(1.0)) {
            return Fate::Drop;
        }
        if self.reorder > 0.0 && rng.random_bool(self.reorder.min(1.0)) {
            return Fate::Hold(Duration::ZERO);
        }
        let (d, j) = (self.delay.as_secs_f64(), self.jitter.as_secs_f64());
        let hold = match self.distribution {
            _ if j == 0.0 => d,
            Distribution::Uniform => rng.random_range(d - j..=d + j),
            Distribution::Normal => match rand_distr::Normal::new(d, j) {
                Ok(normal) => normal.sample(rng).min(d + 4.0 * j),
                Err(_) => d,
            },
        };
        Fate::Hold(Duration::from_secs_f64(hold.max(0.0)))
    }
}

/// What becomes of one packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fate {
    Drop,
    /// Accepted after this long.
    Hold(Duration),
}

/// Packets held until their time, at most `limit` of them.
pub struct Pen<T> {
    heap: BinaryHeap<Reverse<Held<T>>>,
    limit: usize,
    seq: u64,
}

struct Held<T> {
    due: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Held<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl<T> Eq for Held<T> {}
impl<T> PartialOrd for Held<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Held<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

impl<T> Pen<T> {
    pub fn new(limit: usize) -> Self {
        Self {
            heap: BinaryHeap::new(),
            limit,
            seq: 0,
        }
    }

    /// Holds `item` until `due`; gives it back if the pen is full.
    pub fn hold(&mut self, item: T, due: Instant) -> Result<(), T> {
        if self.heap.len() >= self.limit {
            return Err(item);
        }
        self.seq += 1;
        self.heap.push(Reverse(Held {
            due,
            seq: self.seq,
            item,
        }));
        Ok(())
    }

    /// The next item due at or before `now`, earliest first (ties in the
    /// order they came).
    pub fn pop_due(&mut self, now: Instant) -> Option<T> {
        if self.heap.peek()?.0.due > now {
            return None;
        }
        self.heap.pop().map(|r| r.0.item)
    }

    /// When the next item is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|r| r.0.due)
    }

    /// Everything still held, earliest first.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(|| self.heap.pop().map(|r| r.0.item))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// What an emulator did to the packets it saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub packets: u64,
    pub dropped: u64,
    /// Dropped because `limit` packets were already held.
    pub overflowed: u64,
    pub reordered: u64,
    pub delayed: u64,
}

/// How long the loop sleeps when nothing is due sooner: the finest grain
/// of a hold (nfq's queue has no file descriptor to wait on).
const TICK: Duration = Duration::from_millis(1);

/// Binds NFQUEUE `queue` (in the calling process's network namespace),
/// calls `ready` once bound, and treats every packet per `params` until
/// `stop` is set; then lets every held packet through and unbinds.
pub fn run(
    queue: u16,
    params: &LinkParams,
    rng: &mut impl Rng,
    stop: &AtomicBool,
    ready: impl FnOnce(),
) -> std::io::Result<Counts> {
    let mut q = nfq::Queue::open()?;
    q.bind(queue)?;
    // The packet's metadata only: a held packet then costs a page, not its
    // copy (the kernel keeps the packet itself).
    q.set_copy_range(queue, 0)?;
    q.set_queue_max_len(queue, params.limit as u32)?;
    q.set_nonblocking(true);
    ready();
    let mut pen = Pen::new(params.limit);
    let mut counts = Counts::default();
    while !stop.load(Ordering::Relaxed) {
        receive(&mut q, params, rng, &mut pen, &mut counts)?;
        let now = Instant::now();
        while let Some(msg) = pen.pop_due(now) {
            accept(&mut q, msg);
        }
        let wait = pen
            .next_due()
            .map_or(TICK, |d| d.saturating_duration_since(Instant::now()));
        std::thread::sleep(wait.min(TICK));
    }
    for msg in pen.drain().collect::<Vec<_>>() {
        accept(&mut q, msg);
    }
    let _ = q.unbind(queue);
    Ok(counts)
}

/// Reads every packet waiting in the queue and decides its fate.
fn receive(
    q: &mut nfq::Queue,
    params: &LinkParams,
    rng: &mut impl Rng,
    pen: &mut Pen<nfq::Message>,
    counts: &mut Counts,
) -> std::io::Result<()> {
    loop {
        let mut msg = match q.recv() {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            // A signal, or the kernel's queue overflowed: go on.
            Err(e) if matches!(e.raw_os_error(), Some(libc_eintr::EINTR | libc_eintr::ENOBUFS)) => continue,
            Err(e) => return Err(e),
        };
        counts.packets += 1;
        match params.fate(rng) {
            Fate::Drop => {
                counts.dropped += 1;
                msg.set_verdict(nfq::Verdict::Drop);
                verdict(q, msg);
            }
            Fate::Hold(d) if d.is_zero() => {
                counts.reordered += 1;
                accept(q, msg);
            }
            Fate::Hold(d) => match pen.hold(msg, Instant::now() + d) {
                Ok(()) => counts.delayed += 1,
                Err(mut msg) => {
                    counts.overflowed += 1;
                    msg.set_verdict(nfq::Verdict::Drop);
                    verdict(q, msg);
                }
            },
        }
    }
}

fn accept(q: &mut nfq::Queue, mut msg: nfq::Message) {
    msg.set_verdict(nfq::Verdict::Accept);
    verdict(q, msg);
}

/// Issues a packet's verdict. One that cannot be sent is left to the
/// kernel, which drops the packet when the queue is unbound: a lost
/// packet, which is what this emulates anyway.
fn verdict(q: &mut nfq::Queue, msg: nfq::Message) {
    if let Err(e) = q.verdict(msg) {
        eprintln!("linkem: verdict: {e}");
    }
}

/// The two errno values `receive` rides over (Linux's numbers).
mod libc_eintr {
    pub const EINTR: i32 = 4;
    pub const ENOBUFS: i32 = 105;
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn draw(p: &LinkParams, n: usize) -> Vec<Fate> {
        let mut rng = StdRng::seed_from_u64(1);
        (0..n).map(|_| p.fate(&mut rng)).collect()
    }

    #[test]
    fn loss_drops_about_that_share() {
        let p = LinkParams {
            loss: 0.2,
            ..LinkParams::default()
        };
        let dropped = draw(&p, 10_000).iter().filter(|f| **f == Fate::Drop).count();
        assert!((1_800..2_200).contains(&dropped), "{dropped}");
        let all = LinkParams {
            loss: 1.0,
            ..LinkParams::default()
        };
        assert!(draw(&all, 1_000).iter().all(|f| *f == Fate::Drop));
    }

    #[test]
    fn holds_stay_within_the_jitter() {
        for distribution in [Distribution::Uniform, Distribution::Normal] {
            let p = LinkParams {
                delay: Duration::from_millis(50),
                jitter: Duration::from_millis(20),
                distribution,
                ..LinkParams::default()
            };
            let holds: Vec<f64> = draw(&p, 10_000)
                .iter()
                .map(|f| match f {
                    Fate::Hold(d) => d.as_secs_f64() * 1e3,
                    Fate::Drop => panic!("no loss configured"),
                })
                .collect();
            let mean = holds.iter().sum::<f64>() / holds.len() as f64;
            assert!((48.0..52.0).contains(&mean), "{distribution:?}: mean {mean}");
            let (lo, hi) = match distribution {
                Distribution::Uniform => (30.0, 70.0),
                Distribution::Normal => (0.0, 130.0),
            };
            assert!(holds.iter().all(|h| (lo..=hi).contains(h)), "{distribution:?}");
            assert!(holds.iter().any(|h| *h < 40.0) && holds.iter().any(|h| *h > 60.0));
        }
    }

    #[test]
    fn reorder_lets_some_through_at_once() {
        let p = LinkParams {
            delay: Duration::from_millis(50),
            reorder: 0.25,
            ..LinkParams::default()
        };
        let now = draw(&p, 10_000)
            .iter()
            .filter(|f| **f == Fate::Hold(Duration::ZERO))
            .count();
        assert!((2_300..2_700).contains(&now), "{now}");
    }

    #[test]
    fn the_pen_releases_by_due_time_and_is_bounded() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut pen = Pen::new(3);
        pen.hold("late", t0 + ms(30)).unwrap();
        pen.hold("early", t0 + ms(10)).unwrap();
        pen.hold("tie", t0 + ms(10)).unwrap();
        assert_eq!(pen.hold("full", t0), Err("full"));
        assert_eq!(pen.pop_due(t0), None);
        assert_eq!(pen.next_due(), Some(t0 + ms(10)));
        assert_eq!(pen.pop_due(t0 + ms(10)), Some("early"));
        assert_eq!(pen.pop_due(t0 + ms(20)), Some("tie"));
        assert_eq!(pen.pop_due(t0 + ms(20)), None);
        assert_eq!(pen.len(), 1);
        assert_eq!(pen.drain().collect::<Vec<_>>(), vec!["late"]);
        assert!(pen.is_empty());
    }
}
