// embedFace (the recognition and enrolment routes' engine call) of two builds in one process: this package and
// another package root (a checkout of another commit, built: its dist/ and build/Release/edgecv.node). Calls
// alternate one by one, the order swapped every call, one worker each; p50 ms of the call, its decode and its
// detection per photo and build. The route-latency bench's 640x480 face photo, the astronaut as a 1280x1280 JPEG
// (q90) and as its own 512x512 PNG.
//   node dist/bench/embed-face-builds.js <other package root> [--calls 150]
//   (docs/models.md, "No face where there is none", reports a run)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '../src/index.js';
import { median } from '../src/metrics/percentiles.js';
import { scaledJpeg, vgaJpeg, VGA_FACE_PHOTO } from './shared/vga-photos.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const other = process.argv[2];
if (!other || other.startsWith('--')) throw new Error('usage: node dist/bench/embed-face-builds.js <other package root> [--calls N]');
const callsAt = process.argv.indexOf('--calls');
const CALLS = callsAt > 0 ? Number(process.argv[callsAt + 1]) : 150;
const WARM_UP = 10;

const photos: [string, Buffer][] = [
  ['640x480 JPEG', vgaJpeg(ROOT, VGA_FACE_PHOTO)],
  ['1280x1280 JPEG', scaledJpeg(ROOT, VGA_FACE_PHOTO, 1280).bytes],
  ['512x512 PNG', readFileSync(path.join(ROOT, 'test', 'data', VGA_FACE_PHOTO))],
];
const otherModule = (await import(path.join(path.resolve(other), 'dist', 'src', 'index.js'))) as { Engine: typeof Engine };
const options = { workers: 1, poseModel: null, objectDetector: null } as const;
const builds: [string, Engine][] = [
  [`other (${other})`, await otherModule.Engine.open(options)],
  ['this', await Engine.open(options)],
];
console.log('| photo | build | embedFace p50 ms | decode p50 ms | detection p50 ms |\n|---|---|---|---|---|');
for (const [name, bytes] of photos) {
  const times = builds.map(() => ({ call: [] as number[], decode: [] as number[], detect: [] as number[] }));
  for (let i = 0; i < WARM_UP; i++) for (const [, engine] of builds) await engine.embedFace(bytes);
  for (let i = 0; i < CALLS; i++) {
    for (const b of i % 2 ? [1, 0] : [0, 1]) {
      const t0 = performance.now();
      const r = await builds[b]![1].embedFace(bytes);
      times[b]!.call.push(performance.now() - t0);
      times[b]!.decode.push(r.timings.decodeMs);
      times[b]!.detect.push(r.timings.detectMs);
    }
  }
  builds.forEach(([build], b) => {
    const t = times[b]!;
    console.log(`| ${name} | ${build} | ${median(t.call).toFixed(2)} | ${median(t.decode).toFixed(2)} | ${median(t.detect).toFixed(2)} |`);
  });
}
for (const [, engine] of builds) await engine.close();
