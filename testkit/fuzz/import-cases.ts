// Hostile bodies for POST /trainer/import/ (JSON lines, gallery/jsonl.ts): a few good lines with one or more bad
// ones (NaN, Infinity, zero vectors, wrong lengths, bad base64, huge lines, broken JSON, bad rectangles and dates).
// The server must refuse the whole import with a 400 naming the line, store nothing of it, and stay able to load
// its gallery: test/fuzz.test.ts checks every exported row afterwards.

import type { Rng } from './cases.js';
import type { ChannelEmbedder } from './redis-channel.js';

const f32 = (values: ArrayLike<number>): string => {
  const out = Buffer.alloc(values.length * 4);
  for (let i = 0; i < values.length; i++) out.writeFloatLE(values[i]!, i * 4);
  return out.toString('base64');
};

/** A random unit-ish vector of `dim` values (a good embedding). */
function vector(rng: Rng, dim: number): number[] {
  return Array.from({ length: dim }, () => rng.next() * 2 - 1);
}

/** One line of an import: [label, text]; `good` lines are accepted on their own. */
export function importLine(rng: Rng, e: ChannelEmbedder, good: boolean): [string, string] {
  const base = { subject: `fuzz-import-${rng.int(5)}`, model: e.model, model_version: e.version };
  if (good) return ['good', JSON.stringify({ ...base, embedding: f32(vector(rng, e.dim)) })];
  const v = vector(rng, e.dim);
  const at = rng.int(e.dim);
  const bad: [string, () => string][] = [
    ['NaN', () => JSON.stringify({ ...base, embedding: f32(v.map((x, i) => (i === at ? NaN : x))) })],
    ['Infinity', () => JSON.stringify({ ...base, embedding: f32(v.map((x, i) => (i === at ? -Infinity : x))) })],
    ['zero vector', () => JSON.stringify({ ...base, embedding: f32(new Float32Array(e.dim)) })],
    ['one value short', () => JSON.stringify({ ...base, embedding: f32(v.slice(1)) })],
    ['one value too many', () => JSON.stringify({ ...base, embedding: f32([...v, 0.5]) })],
    ['6-byte embedding', () => JSON.stringify({ ...base, embedding: Buffer.alloc(6).toString('base64') })],
    ['base64 cut', () => JSON.stringify({ ...base, embedding: f32(v).slice(0, 4 * rng.int(100) + 3) })],
    ['base64 foreign letters', () => JSON.stringify({ ...base, embedding: `${f32(v).slice(0, 100)}*!%$` })],
    ['embedding a number', () => JSON.stringify({ ...base, embedding: 12 })],
    ['huge embedding line (4 MB)', () => JSON.stringify({ ...base, embedding: f32(new Float32Array(1 << 20).fill(0.25)) })],
    ['huge subject (2 MB)', () => JSON.stringify({ ...base, subject: 's'.repeat(2 << 20), embedding: f32(v) })],
    ['subject with control characters', () => JSON.stringify({ ...base, subject: 'a\u0000b', embedding: f32(v) })],
    ['no subject', () => JSON.stringify({ model: e.model, embedding: f32(v) })],
    ['neither image nor embedding', () => JSON.stringify({ subject: 'x' })],
    ['crop without crop_rect', () => JSON.stringify({ subject: 'x', crop: Buffer.from('not a jpeg').toString('base64') })],
    ['crop_rect inverted', () => JSON.stringify({ subject: 'x', crop: '/9j/', crop_rect: [10, 10, 0, 0] })],
    ['crop_rect huge', () => JSON.stringify({ subject: 'x', crop: '/9j/2w==', crop_rect: [0, 0, 2 ** 40, 2 ** 40] })],
    [
      'crop not an image',
      () => JSON.stringify({ subject: 'x', model: 'other', crop: Buffer.from('not a jpeg at all').toString('base64'), crop_rect: [0, 0, 4, 4] }),
    ],
    ['image of random bytes', () => JSON.stringify({ subject: 'x', image: rng.bytes(200).toString('base64') })],
    ['created not a date', () => JSON.stringify({ ...base, created: 'yesterday', embedding: f32(v) })],
    ['another model, no crop', () => JSON.stringify({ ...base, model: 'other', embedding: f32(v) })],
    ['not JSON', () => '{"subject": "x", "embedding": '],
    ['JSON array', () => '[1,2,3]'],
    ['deeply nested', () => `${'['.repeat(50_000)}${']'.repeat(50_000)}`],
  ];
  const [label, make] = rng.pick(bad);
  return [label, make()];
}

/** An import body: good lines with one or more bad ones among them; [label, body, mode]. */
export function importBody(rng: Rng, e: ChannelEmbedder): [string, string, 'append' | 'replace'] {
  const lines: string[] = [];
  const labels: string[] = [];
  const n = 1 + rng.int(6);
  const badAt = new Set([rng.int(n), ...(rng.next() < 0.3 ? [rng.int(n)] : [])]);
  for (let i = 0; i < n; i++) {
    const [label, text] = importLine(rng, e, !badAt.has(i));
    if (label !== 'good') labels.push(`${label} at line ${i + 1}`);
    lines.push(text);
    if (rng.next() < 0.2) lines.push(''); // blank lines are skipped
  }
  return [labels.join(', '), lines.join(rng.next() < 0.2 ? '\r\n' : '\n'), rng.next() < 0.25 ? 'replace' : 'append'];
}
