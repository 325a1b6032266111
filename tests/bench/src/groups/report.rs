//! The run's tables: medians over rounds, writes/s with their spread.

use std::fmt::Write as _;

use super::Writers;
use super::cells::{Kind, Quiet, Writes};
use super::plan::{Cell, Spec};
use crate::median;

fn name<T: clap::ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// One cell's figures on one line, as it is measured.
pub fn line(c: &Cell) -> String {
    let s = c.spec;
    let head = format!(
        "{:<6} G={:<3} {:<9} led {:?}",
        name(&s.kind),
        s.groups,
        name(&s.writers),
        c.led
    );
    match (&c.writes, &c.awake, &c.quiesced) {
        (Some(w), _, _) => format!(
            "{head}  {:>7.0} writes/s  p99 {:>6} us  syncs/s/node {:>5.0} (wal {:>5.0})  cpu/write {:>4.0} us  errors {}",
            w.writes_per_s, w.p99_us, w.syncs_per_s, w.wal_syncs_per_s, w.cpu_us_per_write, w.errors
        ),
        (_, Some(a), Some(q)) => format!(
            "{head}  awake {:>6.1} ms cpu/s {:>6.0} frames/s  quiesced {:>6.1} ms cpu/s {:>6.0} frames/s",
            a.cpu_ms_per_s, a.frames_per_s, q.cpu_ms_per_s, q.frames_per_s
        ),
        _ => head,
    }
}

/// A measure's median over the rounds of one cell, and its min and max.
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

fn over(v: Vec<f64>) -> Spread {
    Spread {
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        median: median(v).unwrap_or(f64::NAN),
    }
}

fn writes_of<'a>(cells: &'a [Cell], spec: &Spec) -> Vec<&'a Writes> {
    cells
        .iter()
        .filter(|c| c.spec == *spec)
        .filter_map(|c| c.writes.as_ref())
        .collect()
}

fn med(ws: &[&Writes], f: impl Fn(&Writes) -> f64) -> f64 {
    median(ws.iter().map(|w| f(w)).collect()).unwrap_or(f64::NAN)
}

/// Writes/s of one group, spread, merged writer: what the others are
/// compared with.
fn one_group(cells: &[Cell]) -> f64 {
    let base = Spec {
        kind: Kind::Spread,
        groups: 1,
        writers: Writers::Merged,
    };
    med(&writes_of(cells, &base), |w| w.writes_per_s)
}

fn write_rows(out: &mut String, specs: &[Spec], cells: &[Cell], kind: Kind) {
    let base = one_group(cells);
    for spec in specs.iter().filter(|s| s.kind == kind) {
        let ws = writes_of(cells, spec);
        let rate = over(ws.iter().map(|w| w.writes_per_s).collect());
        let errors: u64 = ws.iter().map(|w| w.errors).sum();
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} ({:.0}-{:.0}) | {:.2} | {:.1} | {:.1} | {:.0} | {:.1} | {:.0} | {:.1} | {} |",
            spec.groups,
            name(&spec.writers),
            rate.median,
            rate.min,
            rate.max,
            rate.median / base,
            med(&ws, |w| w.p50_us as f64) / 1e3,
            med(&ws, |w| w.p99_us as f64) / 1e3,
            med(&ws, |w| w.syncs_per_s),
            med(&ws, |w| w.writes_per_sync),
            med(&ws, |w| w.cpu_us_per_write),
            med(&ws, |w| w.frames_per_write),
            errors
        );
    }
}

/// An idle cell's medians: CPU ms/s, frames/s, bytes/s.
fn quiet_of(cells: &[Cell], groups: u32, pick: fn(&Cell) -> Option<&Quiet>) -> Option<[f64; 3]> {
    let qs: Vec<&Quiet> = cells
        .iter()
        .filter(|c| c.spec.kind == Kind::Idle && c.spec.groups == groups)
        .filter_map(pick)
        .collect();
    let of = |f: fn(&Quiet) -> f64| median(qs.iter().map(|q| f(q)).collect());
    Some([of(|q| q.cpu_ms_per_s)?, of(|q| q.frames_per_s)?, of(|q| q.bytes_per_s)?])
}

fn idle_rows(out: &mut String, specs: &[Spec], cells: &[Cell]) {
    let picks: [fn(&Cell) -> Option<&Quiet>; 2] = [|c| c.awake.as_ref(), |c| c.quiesced.as_ref()];
    for spec in specs.iter().filter(|s| s.kind == Kind::Idle) {
        let mut row = format!("| {} |", spec.groups);
        for pick in picks {
            let Some([cpu, frames, bytes]) = quiet_of(cells, spec.groups, pick) else {
                continue;
            };
            // Per group beyond the first: the slope from one group.
            let slope = match (spec.groups, quiet_of(cells, 1, pick)) {
                (g, Some([cpu1, frames1, bytes1])) if g > 1 => {
                    let per = |v: f64, v1: f64| (v - v1) / f64::from(g - 1);
                    format!(
                        "{:.0} | {:.1} | {:.0}",
                        per(cpu, cpu1) * 1e3,
                        per(frames, frames1),
                        per(bytes, bytes1)
                    )
                }
                _ => "- | - | -".into(),
            };
            let _ = write!(row, " {cpu:.1} | {frames:.0} | {slope} |");
        }
        let _ = writeln!(out, "{row}");
    }
}

/// The three tables in markdown.
pub fn tables(specs: &[Spec], cells: &[Cell]) -> String {
    let mut out = String::new();
    let head = "| groups | log writers | writes/s (rounds' range) | x 1 group | p50 ms | p99 ms | syncs/s per node | \
                writes per sync | CPU us per write | frames per write | errors |\n\
                |---|---|---|---|---|---|---|---|---|---|---|\n";
    out.push_str("Writes spread evenly over every group:\n\n");
    out.push_str(head);
    write_rows(&mut out, specs, cells, Kind::Spread);
    out.push_str("\nEvery write on group 0, the other groups idle (x 1 group: against one group alone):\n\n");
    out.push_str(head);
    write_rows(&mut out, specs, cells, Kind::Hot);
    out.push_str(
        "\nNo writes (the three nodes together; per group: the slope from one group):\n\n\
         | groups | awake: CPU ms/s | frames/s | per group: CPU us/s | frames/s | bytes/s | \
         quiesced: CPU ms/s | frames/s | per group: CPU us/s | frames/s | bytes/s |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    idle_rows(&mut out, specs, cells);
    out
}
