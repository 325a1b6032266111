//! The memory of the system's server processes: their resident sets read
//! from `/proc/<pid>/status`, and the peak of each over a cell.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the peak sampler reads the resident sets.
const EVERY: Duration = Duration::from_millis(100);

/// The resident set of process `pid` in MiB (`VmRSS`), if it can be read.
pub fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Samples the resident set of each of `pids` every 100 ms until
/// [`PeakRss::stop`], keeping each one's largest.
pub struct PeakRss {
    peaks: Arc<Mutex<Vec<f64>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PeakRss {
    pub fn start(pids: &[u32]) -> Self {
        let pids = pids.to_vec();
        let peaks = Arc::new(Mutex::new(vec![0.0f64; pids.len()]));
        let kept = peaks.clone();
        let task = tokio::spawn(async move {
            loop {
                let now: Vec<f64> = pids.iter().map(|p| rss_mib(*p).unwrap_or(0.0)).collect();
                {
                    let mut peaks = kept.lock().unwrap_or_else(|p| p.into_inner());
                    for (peak, now) in peaks.iter_mut().zip(now) {
                        *peak = peak.max(now);
                    }
                }
                tokio::time::sleep(EVERY).await;
            }
        });
        Self { peaks, task }
    }

    /// Stops sampling; each process's peak in MiB, in the order of `pids`.
    pub async fn stop(self) -> Vec<f64> {
        self.task.abort();
        let _ = self.task.await;
        let peaks = self.peaks.lock().unwrap_or_else(|p| p.into_inner());
        peaks.iter().map(|p| p.round()).collect()
    }
}
