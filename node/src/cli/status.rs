//! `handlestore status`.

use std::time::Duration;

use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use super::{CliError, Conn};

/// Every endpoint's answer to `Status`, or why it gave none: asked all at
/// once, each within `--timeout`, so a frozen node (which takes the
/// connection and never answers) delays the command by `--timeout` at
/// most, and the others' answers are shown beside it.
async fn ask_all(conn: &Conn) -> Result<Vec<(String, Result<pb::StatusResponse, String>)>, CliError> {
    let client = conn.client()?;
    let endpoints = client.endpoints();
    let asks = endpoints.iter().enumerate().filter_map(|(i, url)| {
        let ch = client.channel(i)?;
        Some(async move { (url.to_string(), ask(ch, conn.timeout).await) })
    });
    Ok(futures::future::join_all(asks).await)
}

async fn ask(ch: handlestore_client::NodeChannel, timeout: Duration) -> Result<pb::StatusResponse, String> {
    let mut req = tonic::Request::new(pb::StatusRequest {});
    req.set_timeout(timeout);
    match tokio::time::timeout(timeout, AdminClient::new(ch).status(req)).await {
        Ok(answer) => answer
            .map(tonic::Response::into_inner)
            .map_err(|e| format!("unreachable: {}", e.message())),
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

/// The best-informed answer: the leader's, else the highest term's.
fn view(answers: &[(String, Result<pb::StatusResponse, String>)]) -> Option<&pb::StatusResponse> {
    let mut best: Option<&pb::StatusResponse> = None;
    for s in answers.iter().filter_map(|(_, a)| a.as_ref().ok()) {
        if best.is_none_or(|b| s.term > b.term || s.state == "leader") {
            best = Some(s);
        }
    }
    best
}

pub async fn run(conn: &Conn, json: bool) -> Result<(), CliError> {
    let answers = ask_all(conn).await?;
    let Some(view) = view(&answers) else {
        if json {
            super::json::print(
                &serde_json::json!({ "nodes": answers.iter().map(|(u, a)| super::json::node(u, a)).collect::<Vec<_>>() }),
            );
        } else {
            for (url, a) in &answers {
                if let Err(e) = a {
                    println!("{url:<28} {e}");
                }
            }
        }
        return Err(CliError::new(2, "no node answered"));
    };
    if json {
        super::json::print(&super::json::status(view, &answers));
    } else {
        print_table(view, &answers);
    }
    Ok(())
}

fn print_table(view: &pb::StatusResponse, answers: &[(String, Result<pb::StatusResponse, String>)]) {
    if view.leader_id == 0 {
        println!("leader: none (term {})", view.term);
    } else {
        println!(
            "leader: node {} at {} (term {})",
            view.leader_id, view.leader_addr, view.term
        );
    }
    if !view.cluster_id.is_empty() {
        println!("cluster: {}", view.cluster_id);
    }
    println!("members:");
    for m in &view.members {
        println!(
            "  {:>4}  {:<24} {}",
            m.id,
            m.addr,
            if m.voter { "voter" } else { "learner" }
        );
    }
    println!();
    println!(
        "{:<28} {:>4} {:<10} {:>6} {:>10} {:>10} {:>10} {:>12}",
        "ENDPOINT", "ID", "STATE", "TERM", "LAST LOG", "APPLIED", "FORWARDED", "CLOCK OFFSET"
    );
    let mut memory = Vec::new();
    let mut clock_problems = Vec::new();
    let mut disk_problems = Vec::new();
    let mut sizeless = Vec::new();
    let mut peer_problems = Vec::new();
    for (url, answer) in answers {
        let s = match answer {
            Ok(s) => s,
            Err(e) => {
                println!("{url:<28} {e}");
                continue;
            }
        };
        println!(
            "{:<28} {:>4} {:<10} {:>6} {:>10} {:>10} {:>10} {:>12}",
            url,
            s.node_id,
            s.state,
            s.term,
            s.last_log_index,
            s.applied_index,
            s.forwarded_writes,
            clock_cell(s.clock.as_ref())
        );
        if let Some(c) = s.clock.as_ref().filter(|c| !c.trusted) {
            clock_problems.push(format!("  node {}: {}", s.node_id, c.error));
        }
        if let Some(d) = s.disk.as_ref().filter(|d| !d.problem.is_empty()) {
            disk_problems.push(format!("  node {}: {}", s.node_id, d.problem));
        }
        if s.disk.as_ref().is_some_and(|d| d.size_unknown) {
            sizeless.push(format!(
                "  node {}: its data directory's file system reports no size (statfs total 0)",
                s.node_id
            ));
        }
        peer_problems.extend(
            s.peer_protocols
                .iter()
                .filter(|p| !p.problem.is_empty())
                .map(|p| format!("  node {} about node {}: {}", s.node_id, p.id, p.problem)),
        );
        if let Some(m) = &s.memory {
            memory.push(memory_row(url, m));
        }
    }
    print_problems(
        "clocks not trusted (these nodes do not lead or serve reads that depend on expiry):",
        &clock_problems,
    );
    print_problems("disks full or slow:", &disk_problems);
    print_problems(
        "disk size unknown (writes are taken, but the disk-full guard cannot work there: a write that fails \
         for want of space stops the node; watch the volume's space by other means):",
        &sizeless,
    );
    print_problems(
        "peers that cannot talk to each other (different peer protocols):",
        &peer_problems,
    );
    print_memory(&memory);
    if !view.namespaces.is_empty() {
        println!();
        super::auth::print_usage(&view.namespaces);
    }
}

/// A titled list of problems (none: nothing printed).
fn print_problems(title: &str, problems: &[String]) {
    if problems.is_empty() {
        return;
    }
    println!();
    println!("{title}");
    for p in problems {
        println!("{p}");
    }
}

/// A node's clock against the cluster's: "+3ms", "+3600000ms OFF" past
/// the maximum, "?" before it is measured.
fn clock_cell(c: Option<&pb::ClockStatus>) -> String {
    let Some(c) = c else { return "?".into() };
    match (c.offset_ms, c.trusted) {
        (Some(o), true) => format!("{o:+}ms"),
        (Some(o), false) => format!("{o:+}ms OFF"),
        (None, _) => "? OFF".into(),
    }
}

/// The memory table, one row per node (none: nothing printed).
fn print_memory(rows: &[String]) {
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "{:<28} {:>7} {:>9} {:>11} {:>7} {:>13} {:>9} {:>13} {:>7}",
        "MEMORY (MiB)",
        "RSS",
        "MEMTABLES",
        "BLOCK CACHE",
        "PINNED",
        "TABLE READERS",
        "LOG CACHE",
        "WATCH/BUDGET",
        "OTHER"
    );
    for r in rows {
        println!("{r}");
    }
}

/// One node's memory: what RocksDB and the log cache hold, and the rest of
/// the resident set ("other": buffers, in-flight entries, allocator pages).
fn memory_row(url: &str, m: &pb::Memory) -> String {
    let mib = |b: u64| format!("{:.1}", b as f64 / (1u64 << 20) as f64);
    let known = m.memtables + m.block_cache + m.table_readers + m.log_cache + m.watch;
    let (rss, other) = if m.rss == 0 {
        ("?".into(), "?".into())
    } else {
        (mib(m.rss), mib(m.rss.saturating_sub(known)))
    };
    let watch = format!("{}/{}", mib(m.watch), mib(m.watch_budget));
    format!(
        "{:<28} {:>7} {:>9} {:>11} {:>7} {:>13} {:>9} {:>13} {:>7}",
        url,
        rss,
        mib(m.memtables),
        mib(m.block_cache),
        mib(m.block_cache_pinned),
        mib(m.table_readers),
        mib(m.log_cache),
        watch,
        other
    )
}
