//! The run as a picture: throughput and p99 latency by concurrency, one line
//! per system and operation (SVG).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use super::Row;

pub fn svg(rows: &[Row], title: &str, path: &Path) -> Result<()> {
    let mut lines: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.system != "fsync" && r.ops > 0) {
        lines.entry(format!("{} {}", r.system, r.op)).or_default().push(r);
    }
    let max_c = rows.iter().map(|r| r.concurrency).max().unwrap_or(1).max(2) as f64;
    let max_tp = rows.iter().map(|r| r.throughput).fold(1.0, f64::max) * 1.1;
    let min_p99 = rows.iter().map(|r| r.p99_us.max(1)).min().unwrap_or(1) as f64 / 1.5;
    let max_p99 = rows.iter().map(|r| r.p99_us).max().unwrap_or(1).max(2) as f64 * 1.5;

    let root = SVGBackend::new(path, (1400, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(|e| anyhow!("{e}"))?;
    let (left, right) = root.split_horizontally(700);
    let colors = |i: usize| Palette99::pick(i).to_rgba();

    let mut tp = ChartBuilder::on(&left)
        .caption("throughput (ops/s)", ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((1f64..max_c).log_scale(), 0f64..max_tp)
        .map_err(|e| anyhow!("{e}"))?;
    tp.configure_mesh()
        .x_desc("concurrent clients")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let mut lat = ChartBuilder::on(&right)
        .caption("p99 latency (µs, log)", ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((1f64..max_c).log_scale(), (min_p99..max_p99).log_scale())
        .map_err(|e| anyhow!("{e}"))?;
    lat.configure_mesh()
        .x_desc("concurrent clients")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;

    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = colors(i);
        let style = ShapeStyle::from(color).stroke_width(2);
        let tp_pts: Vec<(f64, f64)> = pts.iter().map(|r| (r.concurrency as f64, r.throughput)).collect();
        tp.draw_series(LineSeries::new(tp_pts.clone(), style))
            .map_err(|e| anyhow!("{e}"))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        tp.draw_series(tp_pts.iter().map(|p| Circle::new(*p, 3, style.filled())))
            .map_err(|e| anyhow!("{e}"))?;
        let lat_pts: Vec<(f64, f64)> = pts
            .iter()
            .map(|r| (r.concurrency as f64, r.p99_us.max(1) as f64))
            .collect();
        lat.draw_series(LineSeries::new(lat_pts.clone(), style))
            .map_err(|e| anyhow!("{e}"))?;
        lat.draw_series(lat_pts.iter().map(|p| Circle::new(*p, 3, style.filled())))
            .map_err(|e| anyhow!("{e}"))?;
    }
    tp.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
