//! CPU time per operation: what a system's server processes (and the load
//! generator itself) spent during one cell, divided by the operations done.
//!
//! Throughput on a shared two-core machine moves by several percent from run
//! to run; the CPU a write costs moves far less, so it is what tells whether
//! a change to the write path made it cheaper. It is also the fairest
//! comparison between systems that all share the same two cores with their
//! load generator.

use std::time::Duration;

/// User plus system CPU time of a process so far, all its threads included
/// (those that ended too), from `/proc/<pid>/stat`. None if it cannot be
/// read (the process is gone, or this is not Linux).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat, ticks_per_second()?)
}

/// The CPU time of this process's threads other than the calling one
/// so far, to the microsecond (getrusage, where /proc counts clock ticks).
pub fn other_threads_cpu() -> Option<Duration> {
    Some(rusage(libc::RUSAGE_SELF)?.saturating_sub(rusage(libc::RUSAGE_THREAD)?))
}

fn rusage(who: libc::c_int) -> Option<Duration> {
    // SAFETY: getrusage only fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut u) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| Duration::from_micros(t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64);
    Some(tv(u.ru_utime) + tv(u.ru_stime))
}

/// The CPU time of this process (the load generator).
pub fn own_cpu() -> Option<Duration> {
    process_cpu(std::process::id())
}

/// The summed CPU time of `pids`; None if any one cannot be read, so a
/// partial sum is never reported as the whole.
pub fn total_cpu(pids: &[u32]) -> Option<Duration> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| process_cpu(p)).sum()
}

/// The CPU time each JIT compiler thread of `pids` has spent so far, by
/// (process, thread): the JVM's threads whose name begins "C1
/// CompilerThread" or "C2 CompilerThread" (or "JVMCI CompilerThread"), as
/// `/proc/<pid>/task/<tid>/comm` shows them (cut to 15 bytes). Empty for
/// processes that are not JVMs.
pub fn jit_threads_cpu(pids: &[u32]) -> std::collections::HashMap<(u32, u32), Duration> {
    let mut out = std::collections::HashMap::new();
    let Some(hz) = ticks_per_second() else {
        return out;
    };
    for &pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if !is_jit_thread(comm.trim_end()) {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            if let Some(cpu) = parse_stat(&stat, hz) {
                out.insert((pid, tid), cpu);
            }
        }
    }
    out
}

/// Whether a thread's (cut) name is one of HotSpot's compiler threads.
fn is_jit_thread(comm: &str) -> bool {
    comm.contains(" CompilerThre")
}

/// The JIT's CPU between two readings of [`jit_threads_cpu`]: each thread's
/// growth (a thread started since counts from zero).
pub fn jit_cpu_since(
    before: &std::collections::HashMap<(u32, u32), Duration>,
    after: &std::collections::HashMap<(u32, u32), Duration>,
) -> Duration {
    after
        .iter()
        .map(|(k, a)| a.saturating_sub(before.get(k).copied().unwrap_or_default()))
        .sum()
}

fn ticks_per_second() -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (t > 0).then_some(t as u64)
}

/// utime and stime are fields 14 and 15; the command name (field 2) is in
/// parentheses and may itself contain spaces or parentheses, so fields are
/// counted after its last ')'.
fn parse_stat(stat: &str, ticks_per_second: u64) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After ')': field 3 (state) is the first; utime is field 14.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (utime + stime) as f64 / ticks_per_second as f64,
    ))
}

/// CPU spent between two readings, in microseconds per operation.
pub fn per_op_us(before: Option<Duration>, after: Option<Duration>, ops: u64) -> Option<f64> {
    match (before, after) {
        (Some(b), Some(a)) if ops > 0 && a >= b => Some((a - b).as_secs_f64() * 1e6 / ops as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_utime_and_stime_after_an_odd_command_name() {
        let stat = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 123 456 789";
        assert_eq!(parse_stat(stat, 100), Some(Duration::from_secs(3)));
    }

    #[test]
    fn a_truncated_line_is_not_a_reading() {
        assert_eq!(parse_stat("4242 (x) S 1 2 3", 100), None);
        assert_eq!(parse_stat("garbage", 100), None);
    }

    #[test]
    fn this_process_cpu_grows_while_it_computes() {
        let before = own_cpu().expect("readable on Linux");
        // Spin until the kernel has charged at least one tick more; a reader
        // that does not see CPU time move never gets there.
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while own_cpu().expect("readable") <= before {
            assert!(start.elapsed() < Duration::from_secs(30), "CPU time did not move");
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
    }

    #[test]
    fn compiler_threads_are_told_from_the_others() {
        for jit in ["C1 CompilerThre", "C2 CompilerThre", "JVMCI CompilerThre"] {
            assert!(is_jit_thread(jit), "{jit}");
        }
        for other in ["GC Thread#0", "http-nio-127.0.", "java", "tokio-runtime-w"] {
            assert!(!is_jit_thread(other), "{other}");
        }
    }

    #[test]
    fn the_jit_cpu_is_each_threads_growth() {
        let ms = Duration::from_millis;
        let before = [((1, 10), ms(500)), ((1, 11), ms(200))].into_iter().collect();
        // Thread 11 went (its count with it), thread 12 began.
        let after = [((1, 10), ms(700)), ((1, 12), ms(30))].into_iter().collect();
        assert_eq!(jit_cpu_since(&before, &after), ms(230));
        assert!(
            jit_threads_cpu(&[std::process::id()]).is_empty(),
            "no JIT in a Rust process"
        );
    }

    #[test]
    fn per_op_needs_both_readings_and_some_ops() {
        let s = Duration::from_secs;
        assert_eq!(per_op_us(Some(s(1)), Some(s(3)), 1000), Some(2000.0));
        assert_eq!(per_op_us(None, Some(s(3)), 1000), None);
        assert_eq!(per_op_us(Some(s(1)), Some(s(3)), 0), None);
        assert!(total_cpu(&[]).is_none());
    }
}
