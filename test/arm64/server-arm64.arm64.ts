// The linux/arm64 image of deploy/Dockerfile (the cross-compiled addon, the official arm64 Node, onnxruntime-node's
// and the npm packages' arm64 binaries, Debian's arm64 OpenCV libraries, on Debian's arm64 slim base), started on
// this x64 host under emulation and checked from outside on loopback: on the same real photos, the four seed routes
// answer what the checkout's x64 server answers. Run by `npm run test:arm64` (scripts/arm64/test-arm64.mjs builds the
// image and names it in EDGECV_ARM64_IMAGE). Emulated: few photos, generous bounded timeouts, no timing asserted.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { photo, useTempDirs } from '../helpers.js';
import { differences, johns, post as postWith, typeOf, type Tolerance } from '../image/answers.js';
import { freePort, startServerProcess, type ServerProcess } from '../../testkit/server-process.js';
import { Container, imageConfig, uidIn, type ImageServer } from '../support/container-image.js';
import { poseDifferences, poseSpread } from '../support/pose-answers.js';
import { arm64Image, startArm64Server } from './arm64-server.js';

const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true });
const tempDir = useTempDirs();

/**
 * How far arm64's answers may be from x64's (labels, subjects, keys and counts are always equal). Face detection
 * (fp32) and recognition (int8) answered identically here; the margins cover onnxruntime's arm64 kernels summing
 * in another order. Objects (yolov5s int8 on both): onnxruntime's arm64 int8 kernels round otherwise than x64's
 * AVX2 ones (docs/int8.md), so among overlapping candidates NMS may keep
 * a slightly different box: confidences within 0.03 and each box overlapping x64's by IoU >= 0.8 (measured: 0.023,
 * IoU 0.86). Pose: movenet-multipose runs int8 on x64 and fp32 on arm64 by design (its int8 file lists only x64,
 * src/engine/manifest.ts modelPrecision), and no option compares like with like: --precision is the engine's, so
 * fp32 on x64 would also move yolov5s-320, the person finder (int8 on both), and compare other crops. Its margins
 * are int8's against fp32's: keypoint scores within 0.2 and coordinates within 12 px (measured: 0.172, 11 px as
 * qemu's max CPU, 8 px as a Cortex-A76). The answer lists a keypoint only from the keypoint threshold (0.3), so a
 * keypoint listed on one side only is the same answer when some score under the threshold lies within 0.2 of the
 * listed one, that is when the listed score is at most threshold + 0.2: the same margin, not a wider one
 * (test/support/pose-answers.ts). Measured: darknet/person.jpg's keypoint 7, 0.372 on arm64, unlisted on x64.
 */
const TOLERANCE: Record<string, Tolerance> = {
  'detector/detect/': { unit: 0.01, other: 2 },
  'recognizer/predict/': { unit: 0.01, other: 1 },
};
const OBJECTS = { confidence: 0.03, iou: 0.8 };
const POSES = { score: 0.2, px: 12 };

type Rect = [number, number, number, number];
function iou(a: Rect, b: Rect): number {
  const inter = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0])) * Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const area = (r: Rect) => (r[2] - r[0]) * (r[3] - r[1]);
  return inter / (area(a) + area(b) - inter);
}

/** Where two /object/detect/ answers differ: classes in order, confidences, boxes by IoU (empty: the same). */
function objectDifferences(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  type Found = { rect: Rect; class: string; confidence: string };
  const [mine, theirs] = [a['objects'], b['objects']] as [Found[], Found[]];
  if (mine.length !== theirs.length) return [`${mine.length} objects vs ${theirs.length}`];
  return mine.flatMap((m, i) => {
    const t = theirs[i]!;
    const out: string[] = [];
    if (m.class !== t.class) out.push(`[${i}] ${m.class} vs ${t.class}`);
    if (Math.abs(Number(m.confidence) - Number(t.confidence)) > OBJECTS.confidence) out.push(`[${i}] confidence ${m.confidence} vs ${t.confidence}`);
    if (!(iou(m.rect, t.rect) >= OBJECTS.iou))
      out.push(`[${i}] ${JSON.stringify(m.rect)} vs ${JSON.stringify(t.rect)}: IoU ${iou(m.rect, t.rect).toFixed(2)}`);
    return out;
  });
}

const PHOTOS: [string, string[]][] = [
  ['detector/detect/', ['dlib/faces/2008_002470.jpg', 'skimage/astronaut.png']],
  ['object/detect/', ['darknet/dog.jpg', 'darknet/horses.jpg']],
  ['pose/detect/', ['darknet/person.jpg']],
];

const IMAGE = arm64Image();
let probe: Container;
let rootfs: string;
let reference: ServerProcess;
let server: ImageServer;

beforeAll(async () => {
  probe = new Container(IMAGE);
  rootfs = probe.mount();
  const uid = uidIn(rootfs, imageConfig(IMAGE).User);
  // both start at once; each is kept as soon as it is up, so afterAll stops it even when the other fails
  const starting = [
    startServerProcess(['--data-dir', tempDir('edgecv-arm64-reference-')]).then((s) => (reference = s)),
    startArm64Server({
      image: IMAGE,
      dataDir: tempDir('edgecv-arm64-data-'),
      cpuDir: tempDir('edgecv-arm64-cpu-'),
      port: await freePort(),
      uid,
      timeoutMs: 840_000,
    }).then((s) => (server = s)),
  ];
  for (const r of await Promise.allSettled(starting)) if (r.status === 'rejected') throw r.reason;
  console.log(`[arm64] ${IMAGE}: ready ${(server.readyMs / 1000).toFixed(1)} s after start (emulated)`);
  console.log(
    server
      .output()
      .split('\n')
      .filter((l) => l.includes('start-up:'))
      .map((l) => `[arm64] ${l}`)
      .join('\n'),
  );
});

afterAll(async () => {
  await reference?.stop();
  await server?.stop('SIGKILL');
  server?.container.remove();
  probe?.remove();
});

describe(`the linux/arm64 image ${IMAGE} under emulation`, () => {
  it('is an arm64 image of arm64 code: its node, addon, native modules and shared libraries are aarch64 ELF objects', () => {
    expect(
      execFileSync('buildah', ['inspect', '--type', 'image', '--format', '{{.OCIv1.OS}}/{{.OCIv1.Architecture}}', IMAGE], {
        encoding: 'utf8',
      }).trim(),
    ).toBe('linux/arm64');
    const machine = (file: string) => fs.readFileSync(file).readUInt16LE(18); // ELF e_machine: 183 is EM_AARCH64
    const app = path.join(rootfs, imageConfig(IMAGE).WorkingDir);
    const natives = fs
      .readdirSync(app, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.node'));
    expect(natives.map((f) => path.basename(f)).sort()).toEqual(expect.arrayContaining(['edgecv.node', 'onnxruntime_binding.node', 'usearch.node']));
    expect(natives.some((f) => /better.sqlite3/.test(f))).toBe(true);
    const libs = fs.readdirSync(path.join(rootfs, 'usr/local/lib')).filter((f) => /\.so(\.|$)/.test(f));
    expect(libs.some((f) => f.startsWith('libopencv_dnn'))).toBe(true);
    for (const f of [
      path.join(rootfs, 'usr/local/bin/node'),
      ...natives.map((n) => path.join(app, n)),
      ...libs.map((l) => path.join(rootfs, 'usr/local/lib', l)),
    ])
      expect([f, machine(f)]).toEqual([f, 183]);
  });

  it('checks its model files at start without hashing them: the image carries their sha256 record', () => {
    expect(server.output()).toMatch(/start-up: model files .*none hashed, \d+ known by size and mtime/);
  });

  it.each(PHOTOS)('answers POST /%s as the x64 checkout does', async (route, photos) => {
    for (const name of photos) {
      const [mine, theirs] = await Promise.all([server.url, reference.url].map((u) => postWith(u, route, photo(name), typeOf(name), agent)));
      expect(mine.status, `${name}: ${JSON.stringify(mine.body)}`).toBe(200);
      expect(mine.body['success'], name).toBe('true');
      expect(theirs.status).toBe(200);
      const found =
        route === 'object/detect/'
          ? objectDifferences(mine.body, theirs.body)
          : route === 'pose/detect/'
            ? poseDifferences(mine.body, theirs.body, POSES)
            : differences(mine.body, theirs.body, TOLERANCE[route]!);
      if (route === 'pose/detect/') console.log(`[arm64] ${name}: pose answers apart by ${JSON.stringify(poseSpread(mine.body, theirs.body))}`);
      expect(found, `${route} ${name}`).toEqual([]);
      if (route === 'object/detect/') expect((mine.body['objects'] as unknown[]).length, name).toBeGreaterThan(0);
    }
  });

  it('answers POST /recognizer/predict/ as the x64 checkout does, after the same enrolments', async () => {
    for (const j of johns()) {
      for (const base of [server.url, reference.url]) {
        const res = await postWith(base, `trainer/add/?subject=${j.subject}`, photo(j.enrol), 'image/jpeg', agent);
        expect(res.status, `${base} ${j.enrol}: ${JSON.stringify(res.body)}`).toBe(200);
      }
    }
    for (const j of johns()) {
      const [mine, theirs] = await Promise.all(
        [server.url, reference.url].map((u) => postWith(u, 'recognizer/predict/', photo(j.ask), 'image/jpeg', agent)),
      );
      expect(mine.status).toBe(200);
      expect(mine.body['subject'], j.ask).toBe(j.subject);
      expect(differences(mine.body, theirs.body, TOLERANCE['recognizer/predict/']!), j.ask).toEqual([]);
    }
  });
});
