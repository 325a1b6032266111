//! Checkers over the recorded history and the final state:
//! (a) every acknowledged add_item is in its cart, none twice;
//! (b) every acknowledged mint (and created cart) is readable after recovery;
//! (c) no cart is checked out twice;
//! (d) every register's history is linearizable.
//! (Recovery per fault, (e), is measured by the runner.)

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::history::{Outcome, Record, around};
use super::linearizability::{RegEvent, RegOp, Verdict, check};

/// What the checkers found. Empty violation lists mean the run passed.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Checks {
    pub acked_adds: usize,
    pub lost_adds: Vec<String>,
    pub duplicated_adds: Vec<String>,
    pub acked_carts: usize,
    pub lost_carts: Vec<String>,
    pub acked_mints: usize,
    pub lost_mints: Vec<String>,
    pub checked_out_carts: usize,
    pub double_checkouts: Vec<String>,
    pub registers_checked: usize,
    pub register_ops: usize,
    pub linearizability_violations: Vec<String>,
    pub linearizability_inconclusive: Vec<String>,
    /// Each violation with the history around it.
    pub details: Vec<String>,
}

impl Checks {
    pub fn lost(&self) -> usize {
        self.lost_adds.len() + self.lost_carts.len() + self.lost_mints.len()
    }

    pub fn duplicated(&self) -> usize {
        self.duplicated_adds.len() + self.double_checkouts.len()
    }

    pub fn passed(&self) -> bool {
        self.lost() == 0 && self.duplicated() == 0 && self.linearizability_violations.is_empty()
    }
}

/// The final state the runner read after recovery.
#[derive(Debug, Default)]
pub struct FinalState {
    /// get_cart's answer per cart (Err: it could not be read, e.g. unknown).
    pub carts: HashMap<String, Result<Value, String>>,
    /// The value of each acknowledged minted handle (None: not found).
    pub mints: HashMap<String, Option<Value>>,
}

fn sku_of(r: &Record) -> Option<String> {
    r.input.get("sku").and_then(Value::as_str).map(str::to_string)
}

pub fn run(records: &[Record], fin: &FinalState, register_initial: &Value, max_states: usize) -> Checks {
    let mut c = Checks::default();
    check_carts(records, fin, &mut c);
    check_mints(records, fin, &mut c);
    check_registers(records, register_initial, max_states, &mut c);
    c
}

fn check_carts(records: &[Record], fin: &FinalState, c: &mut Checks) {
    let mut acked_adds: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut orders: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut created: BTreeSet<String> = BTreeSet::new();
    for r in records.iter().filter(|r| r.outcome == Outcome::Ok) {
        match r.kind {
            "create_cart" => {
                if let Some(id) = r.output.get("cart_id").and_then(Value::as_str) {
                    created.insert(id.to_string());
                }
            }
            "add_item" => {
                if let Some(sku) = sku_of(r) {
                    acked_adds.entry(r.key.as_str()).or_default().insert(sku);
                }
            }
            "checkout" => {
                if let Some(o) = r.output.get("order_id").and_then(Value::as_str) {
                    orders.entry(r.key.as_str()).or_default().insert(o.to_string());
                }
            }
            _ => {}
        }
    }
    c.acked_carts = created.len();
    for cart in &created {
        if !matches!(fin.carts.get(cart), Some(Ok(_))) {
            c.lost_carts.push(cart.clone());
            let why = match fin.carts.get(cart) {
                Some(Err(e)) => e.clone(),
                _ => "not read".into(),
            };
            c.details.push(format!(
                "LOST CART {cart}: created (acknowledged) but unreadable after recovery: {why}\n{}",
                around(records, cart, None, 12)
            ));
        }
    }
    for (cart, skus) in &acked_adds {
        c.acked_adds += skus.len();
        let Some(Ok(state)) = fin.carts.get(*cart) else {
            for sku in skus {
                c.lost_adds.push(format!("{cart}/{sku}"));
            }
            continue;
        };
        let lines: Vec<String> = state["cart"]["lines"]
            .as_array()
            .map(|ls| {
                ls.iter()
                    .filter_map(|l| l["sku"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for l in &lines {
            *counts.entry(l.as_str()).or_default() += 1;
        }
        for sku in skus {
            if !counts.contains_key(sku.as_str()) {
                c.lost_adds.push(format!("{cart}/{sku}"));
                c.details.push(format!(
                    "LOST ADD {sku} in cart {cart}: acknowledged, missing from the cart {lines:?}\n{}",
                    around(records, cart, None, 16)
                ));
            }
        }
        for (sku, n) in counts.iter().filter(|(_, n)| **n > 1) {
            c.duplicated_adds.push(format!("{cart}/{sku}"));
            c.details.push(format!(
                "DUPLICATED ADD {sku} in cart {cart}: {n} times\n{}",
                around(records, cart, None, 16)
            ));
        }
    }
    for (cart, ids) in &orders {
        c.checked_out_carts += 1;
        let recorded = match fin.carts.get(*cart) {
            Some(Ok(s)) => s["cart"]["order_id"].as_str().map(str::to_string),
            _ => None,
        };
        let mut all = ids.clone();
        if let Some(r) = &recorded {
            all.insert(r.clone());
        }
        if all.len() > 1 {
            c.double_checkouts.push(cart.to_string());
            c.details.push(format!(
                "DOUBLE CHECKOUT of cart {cart}: order ids {all:?}\n{}",
                around(records, cart, None, 16)
            ));
        }
    }
}

fn check_mints(records: &[Record], fin: &FinalState, c: &mut Checks) {
    for r in records.iter().filter(|r| r.kind == "mint" && r.outcome == Outcome::Ok) {
        c.acked_mints += 1;
        match fin.mints.get(&r.key) {
            Some(Some(v)) if *v == r.input => {}
            got => {
                c.lost_mints.push(r.key.clone());
                c.details.push(format!(
                    "LOST MINT {}: acknowledged at {:.3}s with {}, after recovery {:?}",
                    r.key,
                    r.complete_us as f64 / 1e6,
                    r.input,
                    got
                ));
            }
        }
    }
}

fn check_registers(records: &[Record], initial: &Value, max_states: usize, c: &mut Checks) {
    let mut by_key: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| matches!(r.kind, "put" | "get" | "store" | "retrieve"))
    {
        by_key.entry(r.key.as_str()).or_default().push(r);
    }
    for (key, ops) in by_key {
        c.registers_checked += 1;
        let events: Vec<RegEvent> = ops
            .iter()
            .filter_map(|r| {
                let complete = match r.outcome {
                    Outcome::Ok => Some(r.complete_us),
                    // A refused write did nothing; a failed read saw nothing.
                    Outcome::Fail => return None,
                    Outcome::Unknown => None,
                };
                let op = match r.kind {
                    "put" | "store" => RegOp::Write(Some(r.input.clone())),
                    _ => RegOp::Read(Some(r.output.clone()).filter(|v| !v.is_null())),
                };
                Some(RegEvent {
                    client: r.client,
                    invoke: r.invoke_us,
                    complete,
                    op,
                })
            })
            .collect();
        c.register_ops += events.len();
        match check(&events, Some(initial.clone()), max_states) {
            Verdict::Linearizable => {}
            Verdict::Violation => {
                c.linearizability_violations.push(key.to_string());
                c.details.push(format!(
                    "NOT LINEARIZABLE: register {key} ({} operations)\n{}",
                    events.len(),
                    around(records, key, None, 30)
                ));
            }
            Verdict::Inconclusive => c.linearizability_inconclusive.push(key.to_string()),
        }
    }
}
