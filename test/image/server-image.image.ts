// The built image (deploy/Dockerfile), started as a container runtime starts it and checked from outside on
// loopback: its answers on real photos are the checkout's own server's, it is ready and live, it drains on SIGTERM
// and exits 0, its data volume outlives it, it runs as its non-root user and carries no build tools.
// Run by `npm run test:image` (scripts/test-image.mjs builds the image and names it in EDGECV_TEST_IMAGE).

import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_DIR, httpsRequest, photo, useTempDirs } from '../helpers.js';
import { Container, imageConfig, startImageServer, uidIn, type ImageServer } from '../support/container-image.js';
import { freePort, startServerProcess, type ServerProcess } from '../../bench/shared/server-process.js';

const IMAGE = process.env['EDGECV_TEST_IMAGE'] ?? 'localhost/edgecv:test';
const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
const tempDir = useTempDirs();

/**
 * Tolerances of the comparison with the checkout's server (the same addon sources, OpenCV and onnxruntime build,
 * another Node): scores and confidences (|x| <= 1) within 0.01; pixel coordinates and recognition distances
 * within 1 (a value on a rounding edge may round the other way). Labels, subjects and counts are equal.
 */
const TOLERANCE = { unit: 0.01, other: 1 };
/** Per-request timings, different on every answer. */
const TIMINGS = new Set(['serverprocessingtime', 'server_processing_time']);

/** Where two answers differ beyond the tolerances (empty: the same). */
function differences(a: unknown, b: unknown, at = '$'): string[] {
  const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)) ? Number(v) : null);
  const [na, nb] = [num(a), num(b)];
  if (na !== null && nb !== null && typeof a === typeof b) {
    const tol = Math.abs(na) <= 1 && Math.abs(nb) <= 1 ? TOLERANCE.unit : TOLERANCE.other;
    return Math.abs(na - nb) <= tol ? [] : [`${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`];
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return [`${at}: ${a.length} items vs ${b.length}`];
    return a.flatMap((x, i) => differences(x, b[i], `${at}[${i}]`));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = (o: object) => Object.keys(o).filter((k) => !TIMINGS.has(k));
    const [ka, kb] = [keys(a), keys(b)];
    if (ka.join() !== kb.join()) return [`${at}: keys ${ka.join()} vs ${kb.join()}`];
    return ka.flatMap((k) => differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`));
  }
  return a === b ? [] : [`${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`];
}

async function post(base: string, route: string, image: Buffer, contentType: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await httpsRequest(`${base}${route}`, { method: 'POST', headers: { 'content-type': contentType }, body: image, agent });
  return { status: res.status, body: JSON.parse(res.text) as Record<string, unknown> };
}

const typeOf = (name: string) => (name.endsWith('.png') ? 'image/png' : 'image/jpeg');
const JOHNS = 'dlib/johns';
/** Two photos each of two people: the first enrolled, the second asked about. */
function johns(): { subject: string; enrol: string; ask: string }[] {
  return ['John_Simm', 'John_Savage'].map((name) => {
    const files = fs.readdirSync(path.join(DATA_DIR, JOHNS, name)).filter((f) => f.endsWith('.jpg')).sort();
    return { subject: name.toLowerCase(), enrol: `${JOHNS}/${name}/${files[0]}`, ask: `${JOHNS}/${name}/${files[1]}` };
  });
}

let probe: Container;
let rootfs: string;
let uid: number;
let volume: string;
let reference: ServerProcess;
let server: ImageServer;

beforeAll(async () => {
  probe = new Container(IMAGE);
  rootfs = probe.mount();
  uid = uidIn(rootfs, imageConfig(IMAGE).User);
  volume = tempDir('edgecv-image-volume-');
  reference = await startServerProcess(['--data-dir', tempDir('edgecv-image-reference-')]);
  server = await startImageServer({ image: IMAGE, dataDir: volume, port: await freePort(), uid });
  console.log(`[image] ${IMAGE}: ready ${(server.readyMs / 1000).toFixed(1)} s after start`);
});

afterAll(async () => {
  await reference?.stop();
  await server?.stop('SIGKILL');
  server?.container.remove();
  probe?.remove();
});

describe(`the image ${IMAGE}`, () => {
  it('runs the server as its non-root user', () => {
    const user = imageConfig(IMAGE).User;
    expect(user).not.toMatch(/^(root|0)?$/);
    const status = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8');
    const uids = /^Uid:\s+(\d+)\s+(\d+)/m.exec(status);
    expect(uid).toBeGreaterThan(0);
    expect([Number(uids?.[1]), Number(uids?.[2])]).toEqual([uid, uid]);
  });

  it('answers /health/live and /health/ready', async () => {
    for (const route of ['health/live', 'health/ready']) {
      const res = await httpsRequest(`${server.url}${route}`, { agent });
      expect(res.status, route).toBe(200);
    }
  });

  it.each([
    ['detector/detect/', ['skimage/astronaut.png', 'dlib/faces/2008_002470.jpg', 'dlib/faces/bald_guys.jpg']],
    ['object/detect/', ['darknet/dog.jpg', 'darknet/horses.jpg', 'darknet/person.jpg']],
    ['pose/detect/', ['darknet/person.jpg', 'skimage/astronaut.png']],
  ])('answers POST /%s as the checkout does', async (route, photos) => {
    for (const name of photos) {
      const [mine, theirs] = await Promise.all([server.url, reference.url].map((u) => post(u, route, photo(name), typeOf(name))));
      expect(mine.status, name).toBe(200);
      expect(mine.body['success'], name).toBe('true');
      expect(differences(mine.body, theirs.body), `${route} ${name}`).toEqual([]);
      expect(theirs.status).toBe(200);
    }
  });

  it('answers POST /recognizer/predict/ as the checkout does, after the same enrolments', async () => {
    for (const j of johns()) {
      for (const base of [server.url, reference.url]) {
        const res = await post(base, `trainer/add/?subject=${j.subject}`, photo(j.enrol), 'image/jpeg');
        expect(res.status, `${base} ${j.enrol}`).toBe(200);
      }
    }
    for (const j of johns()) {
      const [mine, theirs] = await Promise.all([server.url, reference.url].map((u) => post(u, 'recognizer/predict/', photo(j.ask), 'image/jpeg')));
      expect(mine.status).toBe(200);
      expect(mine.body['subject'], j.ask).toBe(j.subject);
      expect(differences(mine.body, theirs.body), j.ask).toEqual([]);
    }
  });

  it('holds no compiler, headers or dev dependencies', () => {
    const bins = ['/usr/bin', '/usr/local/bin'].flatMap((d) => fs.readdirSync(path.join(rootfs, d)));
    expect(bins.filter((b) => /^(cc|c\+\+|gcc|g\+\+|clang|clang\+\+|ld|as|make|cmake|x86_64-linux-gnu-gcc.*|aarch64-linux-gnu-gcc.*|npm|npx)$/.test(b))).toEqual([]);
    for (const dir of ['usr/include', 'usr/local/include']) {
      const there = fs.existsSync(path.join(rootfs, dir)) ? fs.readdirSync(path.join(rootfs, dir), { recursive: true }).map(String) : [];
      expect(there.filter((f) => /\.(h|hpp)$/.test(f)), dir).toEqual([]);
    }
    const app = path.join(rootfs, imageConfig(IMAGE).WorkingDir);
    const pkg = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const modules = fs.readdirSync(path.join(app, 'node_modules'), { recursive: true, withFileTypes: true }).filter((e) => e.isDirectory());
    const names = new Set(modules.map((e) => path.relative(path.join(app, 'node_modules'), path.join(e.parentPath, e.name)).replace(/^.*node_modules\//, '')));
    expect(Object.keys(pkg.devDependencies).filter((d) => names.has(d))).toEqual([]);
    // built with, never loaded
    expect(['cmake-js', 'node-addon-api'].filter((d) => names.has(d))).toEqual([]);
  });

  it('drains on SIGTERM (the request in flight answers) and exits 0', async () => {
    const inFlight = post(server.url, 'object/detect/', photo('darknet/horses.jpg'), 'image/jpeg');
    await new Promise((r) => setTimeout(r, 50));
    const code = server.stop('SIGTERM');
    expect((await inFlight).status).toBe(200);
    expect(await code).toBe(0);
  });

  it('keeps its data volume across a restart: a face enrolled before is recognized after', async () => {
    server.container.remove();
    server = await startImageServer({ image: IMAGE, dataDir: volume, port: await freePort(), uid });
    const j = johns()[0]!;
    const after = await post(server.url, 'recognizer/predict/', photo(j.ask), 'image/jpeg');
    expect(after.status).toBe(200);
    expect(after.body['subject']).toBe(j.subject);
  });
});
