import { Engine } from './dist/src/index.js';
import fs from 'node:fs';
const buf = fs.readFileSync('test/data/dlib/faces/2008_002506.jpg');
for (const runtime of ['onnxruntime', 'opencv']) for (const workers of [1, 2]) {
  const e = await Engine.open({ workers, threadsPerWorker: 1, runtime, poseModel: null, objectDetector: null, faceEmbedder: null });
  for (let i = 0; i < 10; i++) await e.detectFaces(buf);
  const total = 300; let next = 0; const t = performance.now();
  await Promise.all(Array.from({ length: workers * 2 }, async () => { while (next++ < total) await e.detectFaces(buf); }));
  const s = (performance.now() - t) / 1000;
  const r = await e.detectFaces(buf);
  console.log(runtime, workers, (total / s).toFixed(1), 'img/s', JSON.stringify(r.timings));
  await e.close();
}
