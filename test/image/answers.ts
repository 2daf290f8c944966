// Comparing a server's JSON answers with the checkout's own (test/image for the container image, test/arm64 for
// the arm64 build under emulation): the requests both send, and where two answers differ beyond a tolerance.

import fs from 'node:fs';
import type https from 'node:https';
import path from 'node:path';
import { DATA_DIR, httpsRequest } from '../helpers.js';

/** Largest differences two answers may have: `unit` for numbers with |x| <= 1 (scores), `other` for the rest. */
export interface Tolerance {
  unit: number;
  other: number;
}

/** Per-request timings, different on every answer. */
const TIMINGS = new Set(['serverprocessingtime', 'server_processing_time']);

/** Where two answers differ beyond the tolerance (empty: the same). Labels, subjects, keys and counts are equal. */
export function differences(a: unknown, b: unknown, tolerance: Tolerance, at = '$'): string[] {
  const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)) ? Number(v) : null);
  const [na, nb] = [num(a), num(b)];
  if (na !== null && nb !== null && typeof a === typeof b) {
    const tol = Math.abs(na) <= 1 && Math.abs(nb) <= 1 ? tolerance.unit : tolerance.other;
    return Math.abs(na - nb) <= tol ? [] : [`${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`];
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return [`${at}: ${a.length} items vs ${b.length}`];
    return a.flatMap((x, i) => differences(x, b[i], tolerance, `${at}[${i}]`));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = (o: object) => Object.keys(o).filter((k) => !TIMINGS.has(k));
    const [ka, kb] = [keys(a), keys(b)];
    if (ka.join() !== kb.join()) return [`${at}: keys ${ka.join()} vs ${kb.join()}`];
    return ka.flatMap((k) => differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], tolerance, `${at}.${k}`));
  }
  return a === b ? [] : [`${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`];
}

export async function post(
  base: string,
  route: string,
  image: Buffer,
  contentType: string,
  agent: https.Agent,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await httpsRequest(`${base}${route}`, { method: 'POST', headers: { 'content-type': contentType }, body: image, agent });
  return { status: res.status, body: JSON.parse(res.text) as Record<string, unknown> };
}

export const typeOf = (name: string): string => (name.endsWith('.png') ? 'image/png' : 'image/jpeg');

const JOHNS = 'dlib/johns';
/** Two photos each of two people: the first enrolled, the second asked about. */
export function johns(): { subject: string; enrol: string; ask: string }[] {
  return ['John_Simm', 'John_Savage'].map((name) => {
    const files = fs
      .readdirSync(path.join(DATA_DIR, JOHNS, name))
      .filter((f) => f.endsWith('.jpg'))
      .sort();
    return { subject: name.toLowerCase(), enrol: `${JOHNS}/${name}/${files[0]}`, ask: `${JOHNS}/${name}/${files[1]}` };
  });
}
