//! `linkem`: delay, jitter, loss and reordering for the packets iptables
//! sends to an NFQUEUE, in user space, for kernels without sch_netem
//! (tests/src/linkem.rs). For example, 50 ms ± 20 ms and 10 % loss on what
//! a network namespace sends out of eth0:
//!
//! ```sh
//! ip netns exec NS iptables -I OUTPUT -o eth0 -j NFQUEUE --queue-num 7 --queue-bypass
//! ip netns exec NS linkem --queue 7 --delay 50ms --jitter 20ms --loss 0.1
//! ```
//!
//! It prints `ready` once bound to the queue, runs until killed (or, with
//! `--until-stdin-closes`, until its standard input closes: then it lets
//! every held packet through first), and prints what it did on stderr.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;
use handlestore_tests::linkem::{Distribution, LinkParams, run};
use rand::SeedableRng;
use rand::rngs::StdRng;

#[derive(Parser, Debug)]
#[command(about = "link emulator: netem's delay, jitter, loss and reordering on an NFQUEUE")]
struct Args {
    /// The NFQUEUE number the iptables rules send packets to.
    #[arg(long)]
    queue: u16,
    /// Mean one-way delay added to each packet (e.g. 50ms).
    #[arg(long, default_value = "0ms", value_parser = humantime::parse_duration)]
    delay: Duration,
    /// Spread of the delay around its mean.
    #[arg(long, default_value = "0ms", value_parser = humantime::parse_duration)]
    jitter: Duration,
    #[arg(long, value_enum, default_value_t = Distribution::Uniform)]
    distribution: Distribution,
    /// Probability that a packet is dropped (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    loss: f64,
    /// Probability that a packet is let through at once (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    reorder: f64,
    /// Packets held at once; more are dropped.
    #[arg(long, default_value_t = 1000)]
    limit: usize,
    /// Seed of the draws (default: random).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop when standard input closes (the harness holds it open).
    #[arg(long)]
    until_stdin_closes: bool,
}

fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("{s:?} is not a probability between 0 and 1")),
    }
}

fn main() {
    let a = Args::parse();
    let params = LinkParams {
        delay: a.delay,
        jitter: a.jitter,
        distribution: a.distribution,
        loss: a.loss,
        reorder: a.reorder,
        limit: a.limit.max(1),
    };
    let mut rng = match a.seed {
        Some(s) => StdRng::seed_from_u64(s),
        None => StdRng::from_os_rng(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    if a.until_stdin_closes {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            stop.store(true, Ordering::Relaxed);
        });
    }
    let ready = || {
        println!("ready");
        let _ = std::io::stdout().flush();
    };
    match run(a.queue, &params, &mut rng, &stop, ready) {
        Ok(c) => eprintln!(
            "linkem: queue {}: {} packets, {} dropped, {} over the limit, {} reordered, {} delayed",
            a.queue, c.packets, c.dropped, c.overflowed, c.reordered, c.delayed
        ),
        Err(e) => {
            eprintln!("linkem: queue {}: {e}", a.queue);
            std::process::exit(1);
        }
    }
}
