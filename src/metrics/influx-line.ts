// Metrics rows as InfluxDB line protocol, one point per row:
//   appinst-cpu,app=facesvc,apporg=acme,...,pod=p1 cpu=12.5 1700000000123456789
// The 8 tag columns are tags (an empty one is left out: line protocol has no empty tag values, and
// InfluxQL's tag = '' matches a missing tag). The connections series also tags its port: two ports
// sampled at one time are two points, not one point overwritten. Integer columns are written as
// integers (`123i`), so that InfluxDB answers them as integers; times are nanoseconds.

import { seriesName, TAG_COLUMNS, VALUE_COLUMNS, type Selector, type TagColumn } from './selectors.js';

/** Value columns that are tags in InfluxDB, by series (answered as numbers all the same). */
export const INFLUX_TAG_VALUES: Partial<Record<Selector, readonly string[]>> = { connections: ['port'] };

const escapeKey = (s: string) => s.replace(/[,= \\]/g, (c) => `\\${c}`);
// InfluxDB 1.x reads only \, \= and "\ " as escapes in a tag value and keeps any other backslash as it is:
// escaping the backslash too would store it doubled
const escapeTagValue = (s: string) => s.replace(/[,= ]/g, (c) => `\\${c}`);

/**
 * Why InfluxDB cannot store `value` as a tag value exactly, or null when it can: a line break ends the
 * line, and a backslash before a comma, equals sign or space, or at the end, reads as an escape.
 */
export function unstorableTagValue(value: string): string | null {
  if (/[\r\n]/.test(value)) return 'holds a line break';
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'holds a control character';
  if (/\\([,= ]|$)/.test(value)) return 'holds a backslash before a comma, equals sign or space, or at its end';
  return null;
}

const escapeMeasurement = (s: string) => s.replace(/[, \\]/g, (c) => `\\${c}`);

function formatFloat(v: number): string {
  // finite always (the store holds no NaN); String() is the shortest exact form, and InfluxDB reads
  // a number without the i suffix as a float
  return Number.isFinite(v) ? String(v) : '0';
}

/** One line of line protocol (no trailing newline). */
export function lineOf(selector: Selector, tags: Record<TagColumn, string>, time: bigint, values: readonly number[]): string {
  const tagValues = INFLUX_TAG_VALUES[selector] ?? [];
  const tagPairs: [string, string][] = TAG_COLUMNS.map((c) => [c, tags[c]]);
  const fields: string[] = [];
  VALUE_COLUMNS[selector].forEach((col, i) => {
    const v = values[i]!;
    if (tagValues.includes(col.name)) tagPairs.push([col.name, String(Math.round(v))]);
    else fields.push(`${escapeKey(col.name)}=${col.type === 'int' ? `${Math.round(v)}i` : formatFloat(v)}`);
  });
  // InfluxDB wants tags sorted by key for its fastest path
  tagPairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const tagText = tagPairs
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `,${escapeKey(k)}=${escapeTagValue(v)}`)
    .join('');
  return `${escapeMeasurement(seriesName(selector))}${tagText} ${fields.join(',')} ${time}`;
}
