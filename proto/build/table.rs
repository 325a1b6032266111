//! The text tables under `proto/` (`reasons.txt`, `wire.txt`): one row per
//! line, cells separated by `|`, the last cell free text, `#` comments.

/// The rows of `file`'s `text`, each with exactly `header`'s cells (the
/// last one may hold anything but a line break), with their line numbers.
pub fn rows<'a>(file: &str, text: &'a str, header: &[&str]) -> Result<Vec<(usize, Vec<&'a str>)>, String> {
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.splitn(header.len(), '|').map(str::trim).collect();
        if cells.len() != header.len() || cells.iter().any(|c| c.is_empty()) {
            return Err(format!("{file}:{}: want `{}`", n + 1, header.join(" | ")));
        }
        rows.push((n + 1, cells));
    }
    Ok(rows)
}
