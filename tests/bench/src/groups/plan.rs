//! Which cells a run measures, and one cell's measuring on fresh
//! databases.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::Writers;
use super::cells::{self, Kind, Load, Quiet, Writes};
use super::cluster::Cluster;

/// One cell: what runs, on how many groups, with which log writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    pub kind: Kind,
    pub groups: u32,
    pub writers: Writers,
}

/// One measured cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub spec: Spec,
    pub round: u64,
    /// How many groups each node led.
    pub led: [usize; 3],
    pub writes: Option<Writes>,
    pub awake: Option<Quiet>,
    pub quiesced: Option<Quiet>,
}

/// Spread over G groups with the merged writer at every count, with a
/// writer per group and with one hot group where G > 1, idle at every
/// count.
pub fn plan(groups: &[u32]) -> Vec<Spec> {
    let spec = |kind, groups, writers| Spec { kind, groups, writers };
    let many = || groups.iter().copied().filter(|&g| g > 1);
    let mut out: Vec<Spec> = groups.iter().map(|&g| spec(Kind::Spread, g, Writers::Merged)).collect();
    out.extend(many().map(|g| spec(Kind::Spread, g, Writers::PerGroup)));
    out.extend(many().map(|g| spec(Kind::Hot, g, Writers::Merged)));
    out.extend(groups.iter().map(|&g| spec(Kind::Idle, g, Writers::Merged)));
    out
}

/// Starts a cluster of `spec.groups` groups in `dir` and measures the cell.
pub async fn measure(dir: &Path, spec: Spec, load: Load) -> Result<Cell> {
    let cluster = Cluster::start(dir, spec.groups, spec.writers).await?;
    let mut cell = Cell {
        spec,
        round: 0,
        led: cluster.led,
        writes: None,
        awake: None,
        quiesced: None,
    };
    match spec.kind {
        Kind::Idle => {
            let (awake, quiesced) = cells::idle(&cluster, load.duration).await;
            (cell.awake, cell.quiesced) = (Some(awake), Some(quiesced));
        }
        kind => cell.writes = Some(cells::writes(&cluster, kind, load).await),
    }
    Ok(cell)
}
