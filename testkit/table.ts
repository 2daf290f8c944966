// A bench section as a Markdown table on stdout.
export function table(title: string, rows: Record<string, string | number>[]): void {
  if (!rows.length) return; // a section that was not run
  console.log(`\n## ${title}`);
  const cols = Object.keys(rows[0]!);
  const cell = (v: string | number) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]!).length)));
  console.log(`| ${cols.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`);
  console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
  for (const r of rows) console.log(`| ${cols.map((c, i) => cell(r[c]!).padEnd(widths[i]!)).join(' | ')} |`);
}
