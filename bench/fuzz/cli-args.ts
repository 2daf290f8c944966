// `--name value` flags of the fuzz and soak programs, as numbers with defaults.

import { parseArgs } from 'node:util';

export function numericFlags<K extends string>(defaults: Record<K, number>, argv = process.argv.slice(2)): Record<K, number> {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(Object.keys(defaults).map((k) => [k, { type: 'string' as const }])),
    strict: true,
  });
  const out = { ...defaults };
  for (const k of Object.keys(defaults) as K[]) {
    const v = values[k];
    if (typeof v !== 'string') continue;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${k} must be a non-negative number (got ${v})`);
    out[k] = n;
  }
  return out;
}
