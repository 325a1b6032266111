/**
 * The text tables under proto/ (reasons.txt, wire.txt): one row per line,
 * cells separated by `|` (the last one free text), `#` comments. Read here
 * once for every module generated from them.
 */

/** `file`'s rows, each cut into `columns` cells; a row with an empty cell is refused. */
export function tableRows(file: string, text: string, columns: number): string[][] {
  const rows: string[][] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const cells = line.split("|").map((c) => c.trim());
    const row = [...cells.slice(0, columns - 1), cells.slice(columns - 1).join("|")];
    if (cells.length < columns || row.some((c) => c === "")) throw new Error(`${file}: malformed row: ${line}`);
    rows.push(row);
  }
  return rows;
}
