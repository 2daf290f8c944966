// Hostile WebSocket traffic for `npm run fuzz` (bench/fuzz/fuzz.ts) and its short run in npm test
// (test/websocket.test.ts): seeded cases, each on a connection of its own, written at the byte level
// (testkit/ws-raw.ts). What must hold: a refused handshake is a JSON 4xx; every answer frame is JSON (or
// the echo of a text frame) and never a 5xx other than 503; a protocol violation closes with its close code
// (1002, 1007, 1009), never 1011; the server stays up.

import { WS_ROUTES } from '../../src/server/websocket.js';
import { clientFrame, OPCODE, rawUpgrade, type RawUpgrade } from '../ws-raw.js';
import { Rng } from './cases.js';

export const WS_KINDS = ['ws-handshake', 'ws-image', 'ws-text', 'ws-fragmented', 'ws-protocol', 'ws-truncated'] as const;
type WsKind = (typeof WS_KINDS)[number];

interface WsCase {
  kind: WsKind;
  label: string;
  path: string;
  headers: Record<string, string | null>;
  /** Written after the 101, one write each. */
  writes: Buffer[];
  /** What the server must do: answer this many frames, refuse the handshake, close with one of these codes, or anything but crash. */
  expect: { answers: number; echo?: string } | { refused: true } | { closeCodes: number[] } | { any: true };
}

const ROUTES = Object.keys(WS_ROUTES);

function mutate(rng: Rng, photo: Buffer): { bytes: Buffer; what: string } {
  switch (rng.int(4)) {
    case 0:
      return { bytes: photo, what: 'photo' };
    case 1: {
      const n = 1 + rng.int(photo.length - 1);
      return { bytes: photo.subarray(0, n), what: `photo cut at ${n}` };
    }
    case 2: {
      const b = Buffer.from(photo);
      const flips = 1 + rng.int(16);
      for (let i = 0; i < flips; i++) b[rng.int(b.length)] ^= 1 << rng.int(8);
      return { bytes: b, what: `photo, ${flips} bits flipped` };
    }
    default: {
      const n = rng.int(4096);
      return { bytes: rng.bytes(n), what: `${n} random bytes` };
    }
  }
}

function makeCase(rng: Rng, photos: Buffer[]): WsCase {
  const kind = rng.pick(WS_KINDS);
  const path = rng.pick(ROUTES) + rng.pick(['', '/', '?threshold=0.3', '?threshold=abc', '?x=' + 'y'.repeat(rng.int(2000))]);
  const base = { kind, path, headers: {} };
  switch (kind) {
    case 'ws-handshake': {
      const variants: [string, Record<string, string | null>, string][] = [
        ['unknown path', {}, '/ws/no/such/route'],
        ['foreign origin', { Origin: 'https://evil.example' }, path],
        ['origin null', { Origin: 'null' }, path],
        ['bad key', { 'Sec-WebSocket-Key': rng.bytes(8).toString('hex') }, path],
        ['no key', { 'Sec-WebSocket-Key': null }, path],
        ['version 7', { 'Sec-WebSocket-Version': '7' }, path],
        ['Upgrade: h2c', { Upgrade: 'h2c' }, path],
      ];
      const [what, headers, p] = rng.pick(variants);
      return { ...base, label: `handshake ${what} ${p.slice(0, 60)}`, path: p, headers, writes: [], expect: { refused: true } };
    }
    case 'ws-image': {
      const frames = 1 + rng.int(3);
      const writes: Buffer[] = [];
      const whats: string[] = [];
      for (let i = 0; i < frames; i++) {
        const m = mutate(rng, rng.pick(photos));
        writes.push(clientFrame(OPCODE.binary, m.bytes));
        whats.push(m.what);
      }
      return { ...base, label: `${frames} image frames (${whats.join('; ')}) to ${path.slice(0, 60)}`, writes, expect: { answers: frames } };
    }
    case 'ws-text': {
      const text = rng.pick(['ping', '{"t":1}', '', 'ü'.repeat(rng.int(300)), 'x'.repeat(rng.int(70_000))]);
      return {
        ...base,
        label: `text frame of ${text.length} characters`,
        writes: [clientFrame(OPCODE.text, text)],
        expect: { answers: 1, echo: text },
      };
    }
    case 'ws-fragmented': {
      const m = mutate(rng, rng.pick(photos));
      const cut = rng.int(m.bytes.length + 1);
      const ping = rng.int(2) === 0;
      const writes = [
        clientFrame(OPCODE.binary, m.bytes.subarray(0, cut), { fin: false }),
        ...(ping ? [clientFrame(OPCODE.ping, 'between fragments')] : []),
        clientFrame(OPCODE.continuation, m.bytes.subarray(cut)),
      ];
      return { ...base, label: `${m.what} in 2 fragments at ${cut}${ping ? ', a ping between' : ''}`, writes, expect: { answers: 1 } };
    }
    case 'ws-protocol': {
      const variants: [string, Buffer, number[]][] = [
        ['unmasked frame', clientFrame(OPCODE.binary, rng.bytes(16), { mask: false }), [1002]],
        ['reserved bits', clientFrame(OPCODE.binary, rng.bytes(16), { rsv: 1 + rng.int(7) }), [1002]],
        ['reserved opcode', clientFrame(3 + rng.int(5), rng.bytes(8)), [1002]],
        ['continuation first', clientFrame(OPCODE.continuation, rng.bytes(8)), [1002]],
        ['ping of 126 bytes', clientFrame(OPCODE.ping, rng.bytes(126)), [1002]],
        ['fragmented ping', clientFrame(OPCODE.ping, 'x', { fin: false }), [1002]],
        ['invalid UTF-8 text', clientFrame(OPCODE.text, Buffer.from([0xc3, 0x28, 0xff])), [1007]],
        ['close code 999', clientFrame(OPCODE.close, Buffer.from([0x03, 0xe7])), [1002]],
        ['length 2^40', clientFrame(OPCODE.binary, Buffer.alloc(0), { claimedLength: 2 ** 40 }), [1009]],
        ['text over the body limit', clientFrame(OPCODE.text, Buffer.alloc(0), { claimedLength: 21 * 1024 * 1024 }), [1009]],
      ];
      const [what, frame, codes] = rng.pick(variants);
      return { ...base, label: `${what} on ${path.slice(0, 60)}`, writes: [frame], expect: { closeCodes: codes } };
    }
    case 'ws-truncated': {
      const m = mutate(rng, rng.pick(photos));
      const frame = clientFrame(OPCODE.binary, m.bytes);
      const n = rng.int(frame.length);
      return {
        ...base,
        label: `frame cut at ${n} of ${frame.length}, then the connection ends`,
        writes: [frame.subarray(0, n)],
        expect: { any: true },
      };
    }
  }
}

export interface WsKindReport {
  cases: number;
  /** 'answered', 'echoed', 'refused 403', 'closed 1002', ... */
  outcomes: Record<string, number>;
}

export interface WsFuzzReport {
  cases: number;
  byKind: Record<string, WsKindReport>;
  /** Cases whose outcome broke a rule (a 5xx, a non-JSON answer, a wrong or missing close code, no answer). */
  failures: string[];
  wallMs: number;
}

function isJsonAnswer(text: string): boolean {
  try {
    const body = JSON.parse(text) as { success?: unknown; status?: unknown };
    return typeof body === 'object' && body !== null && (body.success === 'true' || body.success === 'false');
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return check();
}

/** Runs one case; returns its outcome, and a failure message when a rule broke. */
async function runCase(host: string, port: number, c: WsCase, timeoutMs: number): Promise<{ outcome: string; failure?: string }> {
  let up: RawUpgrade;
  try {
    up = await rawUpgrade({ host, port, path: c.path, headers: c.headers, timeoutMs });
  } catch (e) {
    return { outcome: 'no answer', failure: `${c.label}: no answer to the upgrade (${(e as Error).message})` };
  }
  try {
    if ('refused' in c.expect) {
      if (up.status === 101) return { outcome: '101', failure: `${c.label}: upgraded, expected a refusal` };
      if (up.status < 400 || up.status >= 500) return { outcome: `refused ${up.status}`, failure: `${c.label}: refused with ${up.status}` };
      if (!isJsonAnswer(up.body)) return { outcome: `refused ${up.status}`, failure: `${c.label}: refusal not JSON: ${up.body.slice(0, 200)}` };
      return { outcome: `refused ${up.status}` };
    }
    if (up.status !== 101)
      return { outcome: `refused ${up.status}`, failure: `${c.label}: handshake refused with ${up.status} ${up.body.slice(0, 200)}` };
    for (const w of c.writes) up.socket.write(w);
    const answers = () => up.frames.filter((f) => f.opcode === OPCODE.text);
    const closeFrame = () => up.frames.find((f) => f.opcode === OPCODE.close);
    if ('answers' in c.expect) {
      const n = c.expect.answers;
      await until(() => answers().length >= n || closeFrame() !== undefined, timeoutMs);
      const got = answers().map((f) => f.payload.toString());
      if (got.length < n)
        return {
          outcome: 'no answer',
          failure: `${c.label}: ${got.length} of ${n} answers${closeFrame() ? `, closed ${closeFrame()!.payload.readUInt16BE(0)}` : ''}`,
        };
      if (c.expect.echo !== undefined) {
        return got[0] === c.expect.echo ? { outcome: 'echoed' } : { outcome: 'wrong echo', failure: `${c.label}: echo differs` };
      }
      for (const text of got) {
        if (!isJsonAnswer(text)) return { outcome: 'not JSON', failure: `${c.label}: answer not JSON: ${text.slice(0, 200)}` };
        const status = (JSON.parse(text) as { status?: number }).status;
        if (status !== undefined && status >= 500 && status !== 503)
          return { outcome: `status ${status}`, failure: `${c.label}: answered ${text.slice(0, 200)}` };
      }
      const statuses = got.map((t) => String((JSON.parse(t) as { status?: number }).status ?? 200));
      return { outcome: `answered ${[...new Set(statuses)].sort().join('/')}` };
    }
    if ('closeCodes' in c.expect) {
      await until(() => closeFrame() !== undefined, timeoutMs);
      const frame = closeFrame();
      const code = frame && frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : null;
      if (code === null || !c.expect.closeCodes.includes(code)) {
        return {
          outcome: `closed ${code ?? 'without a close frame'}`,
          failure: `${c.label}: closed with ${code ?? 'no close frame'}, expected ${c.expect.closeCodes.join(' or ')}`,
        };
      }
      return { outcome: `closed ${code}` };
    }
    up.socket.end();
    await Promise.race([up.closed, new Promise((r) => setTimeout(r, timeoutMs))]);
    return { outcome: 'ended' };
  } finally {
    up.socket.destroy();
  }
}

export async function runWebSocketFuzz(opts: {
  host: string;
  port: number;
  seed: number;
  cases: number;
  concurrency: number;
  photos: Buffer[];
  timeoutMs?: number;
  onCase?: (done: number) => void;
}): Promise<WsFuzzReport> {
  const rng = new Rng(opts.seed);
  const cases = Array.from({ length: opts.cases }, () => makeCase(rng, opts.photos));
  const byKind: Record<string, WsKindReport> = {};
  const failures: string[] = [];
  const t0 = Date.now();
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!;
      const r = await runCase(opts.host, opts.port, c, opts.timeoutMs ?? 30_000);
      const k = (byKind[c.kind] ??= { cases: 0, outcomes: {} });
      k.cases++;
      k.outcomes[r.outcome] = (k.outcomes[r.outcome] ?? 0) + 1;
      if (r.failure) failures.push(r.failure);
      opts.onCase?.(++done);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  return { cases: opts.cases, byKind, failures, wallMs: Date.now() - t0 };
}
