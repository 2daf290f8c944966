// Malformed messages for the fleet's Redis change channel (edgecv:gallery:changes): what a broken peer, an older
// or newer edgecv, or anyone with access to Redis might publish. Every server of the fleet must log and skip them
// (resyncing from Redis), never crash. Used by test/gallery-fleet.test.ts and `npm run fuzz` (bench/fuzz/fuzz.ts).

import type { Rng } from './cases.js';

export { CHANGE_CHANNEL } from '../../src/gallery/change-messages.js';

/** The embedding model of the fleet (GET /server/capabilities/ -> gallery.embedder). */
export interface ChannelEmbedder {
  model: string;
  version: string;
  dim: number;
}

const b64 = (values: number[]): string => {
  const out = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => out.writeFloatLE(v, i * 4));
  return out.toString('base64');
};

/**
 * Ids far above any the tests enrol: a well-formed 'remove' of them changes nothing real, and an 'add' with a bad
 * vector is quarantined under an id nobody uses.
 */
const FAR_ID = 900_000_000;

/** Every kind of malformed message, once: [label, message text]. */
export function malformedChangeMessages(e: ChannelEmbedder): [string, string][] {
  const unit = Array.from({ length: e.dim }, (_, i) => (i === 0 ? 1 : 0));
  const sample = (over: Record<string, unknown>) => ({
    id: FAR_ID + 1,
    subject: 'x',
    createdAt: 0,
    model: e.model,
    modelVersion: e.version,
    embedding: b64(unit),
    ...over,
  });
  const add = (samples: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ origin: 'fuzz', op: 'add', samples, ...extra });
  return [
    // the message a probe sent that crashed 2 of 2 servers
    [
      'a 2-byte embedding',
      '{"origin":"x","op":"add","samples":[{"id":9,"subject":"x","createdAt":0,"model":"faceres","modelVersion":"v","embedding":"AAA"}]}',
    ],
    ['not JSON', 'not json at all'],
    ['empty', ''],
    ['JSON null', 'null'],
    ['JSON array', '[1,2,3]'],
    ['JSON string', '"add"'],
    ['no origin', JSON.stringify({ op: 'resync' })],
    ['origin not a string', JSON.stringify({ origin: 7, op: 'add', samples: [sample({})] })],
    ['unknown op', JSON.stringify({ origin: 'fuzz', op: 'drop-all' })],
    ['write not a string', JSON.stringify({ origin: 'fuzz', write: {}, op: 'resync' })],
    ['samples not a list', add('all of them')],
    ['samples empty', add([])],
    ['65 samples', add(Array.from({ length: 65 }, (_, i) => sample({ id: FAR_ID + 10 + i })))],
    ['sample null', add([null])],
    ['id a string', add([sample({ id: '9' })])],
    ['id negative', add([sample({ id: -4 })])],
    ['id fractional', add([sample({ id: 1.5 })])],
    ['id past 2^53', add([sample({ id: 2 ** 60 })])],
    ['subject a number', add([sample({ subject: 12 })])],
    ['subject empty', add([sample({ subject: '' })])],
    ['createdAt a string', add([sample({ createdAt: 'yesterday' })])],
    ['model missing', add([sample({ model: undefined })])],
    ['embedding a number', add([sample({ embedding: 3 })])],
    ['embedding foreign letters', add([sample({ embedding: '****' })])],
    ['embedding 6 bytes', add([sample({ embedding: Buffer.alloc(6).toString('base64') })])],
    ['embedding of NaN (current model)', add([sample({ id: FAR_ID + 2, embedding: b64(unit.map((v, i) => (i === 1 ? NaN : v))) })])],
    ['embedding of Infinity (current model)', add([sample({ id: FAR_ID + 3, embedding: b64(unit.map((v, i) => (i === 1 ? Infinity : v))) })])],
    ['zero embedding (current model)', add([sample({ id: FAR_ID + 4, embedding: b64(unit.map(() => 0)) })])],
    ['embedding one value short (current model)', add([sample({ id: FAR_ID + 5, embedding: b64(unit.slice(1)) })])],
    ['NaN embedding of another model', add([sample({ id: FAR_ID + 6, modelVersion: 'other', embedding: b64([NaN, NaN]) })])],
    ['ids not a list', JSON.stringify({ origin: 'fuzz', op: 'remove', ids: 5 })],
    ['ids as strings', JSON.stringify({ origin: 'fuzz', op: 'remove', ids: ['1', '2'] })],
    ['ids negative', JSON.stringify({ origin: 'fuzz', op: 'remove', ids: [-1] })],
    ['remove of ids nobody has', JSON.stringify({ origin: 'fuzz', op: 'remove', ids: [FAR_ID + 7, FAR_ID + 8] })],
    ['deeply nested', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
    ['1 MB subject', add([sample({ subject: 's'.repeat(1 << 20) })])],
    ['prototype keys', '{"__proto__":{"op":"add"},"origin":"fuzz","constructor":{"prototype":{"x":1}},"op":"resync"}'],
  ];
}

/** One seeded malformed message: a known kind, or a known kind with bytes flipped or cut. */
export function randomChangeMessage(rng: Rng, e: ChannelEmbedder): [string, string] {
  const all = malformedChangeMessages(e);
  const [label, text] = rng.pick(all);
  const how = rng.int(3);
  if (how === 0 || text.length === 0) return [label, text];
  if (how === 1) {
    const cut = rng.int(text.length);
    return [`${label}, cut at ${cut}`, text.slice(0, cut)];
  }
  const chars = [...text.slice(0, 4096)];
  for (let i = 0, n = 1 + rng.int(8); i < n; i++) chars[rng.int(chars.length)] = String.fromCharCode(rng.int(128));
  return [`${label}, flipped`, chars.join('') + text.slice(4096)];
}
