// The built image (deploy/Dockerfile), started as a container runtime starts it and checked from outside on
// loopback: its answers on real photos are the checkout's own server's, it is ready and live, it drains on SIGTERM
// and exits 0, its data volume outlives it, it runs as its non-root user and carries no build tools.
// Run by `npm run test:image` (scripts/image/test-image.mjs builds the image and names it in EDGECV_TEST_IMAGE).

import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpsRequest, photo, useTempDirs } from '../helpers.js';
import { differences as differencesWithin, johns, post as postWith, typeOf } from './answers.js';
import { Container, imageConfig, startImageServer, uidIn, type ImageServer } from '../support/container-image.js';
import { freePort, startServerProcess, type ServerProcess } from '../../testkit/server-process.js';

const IMAGE = process.env['EDGECV_TEST_IMAGE'] ?? 'localhost/edgecv:test';
const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
const tempDir = useTempDirs();

/**
 * Tolerances of the comparison with the checkout's server (the same addon sources, OpenCV and onnxruntime build,
 * another Node): scores and confidences (|x| <= 1) within 0.01; pixel coordinates and recognition distances
 * within 1 (a value on a rounding edge may round the other way). Labels, subjects and counts are equal.
 */
const TOLERANCE = { unit: 0.01, other: 1 };
const differences = (a: unknown, b: unknown) => differencesWithin(a, b, TOLERANCE);
const post = (base: string, route: string, image: Buffer, contentType: string) => postWith(base, route, image, contentType, agent);

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
    expect(
      bins.filter((b) => /^(cc|c\+\+|gcc|g\+\+|clang|clang\+\+|ld|as|make|cmake|x86_64-linux-gnu-gcc.*|aarch64-linux-gnu-gcc.*|npm|npx)$/.test(b)),
    ).toEqual([]);
    for (const dir of ['usr/include', 'usr/local/include']) {
      const there = fs.existsSync(path.join(rootfs, dir)) ? fs.readdirSync(path.join(rootfs, dir), { recursive: true }).map(String) : [];
      expect(
        there.filter((f) => /\.(h|hpp)$/.test(f)),
        dir,
      ).toEqual([]);
    }
    const app = path.join(rootfs, imageConfig(IMAGE).WorkingDir);
    const pkg = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const modules = fs.readdirSync(path.join(app, 'node_modules'), { recursive: true, withFileTypes: true }).filter((e) => e.isDirectory());
    const names = new Set(
      modules.map((e) => path.relative(path.join(app, 'node_modules'), path.join(e.parentPath, e.name)).replace(/^.*node_modules\//, '')),
    );
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
