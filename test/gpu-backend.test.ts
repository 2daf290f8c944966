// The GPU tier: `edgecv serve --backend gpu` on the software Vulkan device set-up unpacks (Mesa's lavapipe,
// scripts/setup/software-vulkan.mjs) answers every route as `--backend cpu` does, both at fp32 (the file a GPU net runs),
// says so in gpu_support, /server/capabilities/ and Prometheus. lavapipe is the CPU emulating a GPU: correct and
// slow, so this file makes few requests. What it compares, and why the tolerances, is in docs/gpu.md.

import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';
import { httpsRequest, photo, ROOT, useTempDirs } from './helpers.js';

const ICD = path.join(ROOT, '.cache', 'software-vulkan', 'lvp_icd.json');
/** Box sides and keypoints may move this many pixels between devices (their outputs agree to 1e-3 of the range). */
const PIXELS = 2;
/** Scores and confidences, as the answers print them (3 decimals). */
const SCORE = 0.01;

const agent = new https.Agent({ rejectUnauthorized: false });

/** GET `route`, or POST `body` to it as a raw JPEG; the JSON answer. */
function call(server: ServerProcess, route: string, body?: Buffer): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers = body ? { 'content-type': 'image/jpeg' } : {};
    const req = https.request(new URL(route, server.url), { method: body ? 'POST' : 'GET', agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> });
        } catch {
          resolve({ status: res.statusCode ?? 0, json: { text } });
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function metricsOf(server: ServerProcess): Promise<string> {
  return (await httpsRequest(new URL('/metrics', server.url).href, { agent })).text;
}

function expectClose(gpu: readonly number[], cpu: readonly number[], within: number, what: string): void {
  expect(gpu.length, what).toBe(cpu.length);
  gpu.forEach((v, i) => expect(Math.abs(v - cpu[i]!), `${what}[${i}]: ${v} on the GPU, ${cpu[i]} on the CPU`).toBeLessThanOrEqual(within));
}

const tempDir = useTempDirs();
let gpu: ServerProcess;
let cpu: ServerProcess;

beforeAll(async () => {
  // Inherited by the servers: their Vulkan loader finds lavapipe and nothing else.
  process.env['VK_ICD_FILENAMES'] = ICD;
  // Not warmed: on lavapipe the warm-up's runs at every input shape take minutes, and these few requests are what the
  // file compares (the warm-up itself is tested on the CPU: warm-up-option, warm-shapes).
  const common = ['--precision', 'fp32', '--workers', '1', '--no-warm-up'];
  [gpu, cpu] = await Promise.all([
    startServerProcess(['--backend', 'gpu', '--data-dir', tempDir('gpu-'), ...common], 840_000),
    startServerProcess(['--backend', 'cpu', '--data-dir', tempDir('cpu-'), ...common], 840_000),
  ]);
}, 900_000);

afterAll(async () => {
  delete process.env['VK_ICD_FILENAMES'];
  await Promise.all([gpu?.stop(), cpu?.stop()]);
});

describe('--backend gpu on a software Vulkan device', () => {
  it('names the adapter and puts every net on the GPU, faceres with its fusions off', async () => {
    const { json } = await call(gpu, '/server/capabilities/');
    expect(json['gpu_support']).toBe(true);
    expect(json['backend']).toBe('gpu');
    const adapter = json['gpu'] as Record<string, unknown>;
    expect(adapter).toMatchObject({ vendor: 'Mesa', type: 'cpu', software: true, usable: true });
    expect(String(adapter['device'])).toMatch(/llvmpipe/);
    expect(String(adapter['api'])).toMatch(/^Vulkan 1\./);
    const models = json['models'] as Record<string, { device: string; device_reason?: string; precision: string }>;
    for (const role of ['face_detection', 'face_recognition', 'pose', 'objects', 'pose_persons']) {
      expect(models[role], role).toMatchObject({ device: 'gpu', precision: 'fp32' });
      expect(models[role]!.device_reason, role).toMatch(/^agrees with the CPU/);
    }
    // The WebGPU provider's fused convolution with a Clip gives faceres other answers: the check saw it, and the
    // net runs with onnxruntime's fusions off, where it agrees.
    expect(models['face_recognition']!.device_reason).toMatch(/with onnxruntime's fusions off \(on: cosine 0\.\d+/);
    const cpuCaps = (await call(cpu, '/server/capabilities/')).json;
    expect(cpuCaps['gpu_support']).toBe(false);
    expect(cpuCaps['gpu']).toBeNull(); // --backend cpu never looks for Vulkan
    expect(gpu.output()).toMatch(/edgecv: GPU: Mesa llvmpipe.*software/);
    expect(gpu.output()).toMatch(/GPU check: faceEmbedder on the GPU: agrees with the CPU/);
    // Not warmed, loading ran nothing on the GPU: each net's load-time check of its outputs ran on its CPU session.
    expect(await metricsOf(gpu)).toMatch(/^edgecv_engine_gpu_runs_total 0$/m);
  });

  it('answers /object/detect/ as the CPU does, with gpu_support true', async () => {
    for (const name of ['darknet/dog.jpg']) {
      const [g, c] = await Promise.all([call(gpu, '/object/detect/', photo(name)), call(cpu, '/object/detect/', photo(name))]);
      expect(g.status).toBe(200);
      expect(g.json['gpu_support']).toBe(true);
      expect(c.json['gpu_support']).toBe(false);
      type Obj = { rect: number[]; class: string; confidence: string };
      const go = (g.json['objects'] ?? []) as Obj[];
      const co = (c.json['objects'] ?? []) as Obj[];
      expect(
        go.map((o) => o.class),
        name,
      ).toEqual(co.map((o) => o.class));
      expect(co.length, name).toBeGreaterThan(0);
      go.forEach((o, i) => {
        expectClose(o.rect, co[i]!.rect, PIXELS, `${name} object ${i}`);
        expectClose([Number(o.confidence)], [Number(co[i]!.confidence)], SCORE, `${name} object ${i} confidence`);
      });
    }
  });

  it('finds the same faces and poses', async () => {
    const name = 'dlib/faces/2008_002470.jpg';
    const [gf, cf] = await Promise.all([call(gpu, '/detector/detect/', photo(name)), call(cpu, '/detector/detect/', photo(name))]);
    const gFaces = (gf.json['rects'] ?? []) as number[][];
    const cFaces = (cf.json['rects'] ?? []) as number[][];
    expect(cFaces.length).toBeGreaterThan(0);
    expect(gFaces.length).toBe(cFaces.length);
    gFaces.forEach((rect, i) => expectClose(rect, cFaces[i]!, PIXELS, `face ${i}`));
    const [gp, cp] = await Promise.all([call(gpu, '/pose/detect/', photo(name)), call(cpu, '/pose/detect/', photo(name))]);
    // each pose: 25 [x, y, c] points (BODY_25)
    const gPoses = (gp.json['poses'] ?? []) as number[][][];
    const cPoses = (cp.json['poses'] ?? []) as number[][][];
    expect(cPoses.length).toBeGreaterThan(0);
    expect(gPoses.length).toBe(cPoses.length);
    gPoses.forEach((pose, i) =>
      pose.forEach((k, j) => {
        const ref = cPoses[i]![j]!;
        // a point present on one side only would be one crossing the keypoint threshold: none does on this photo
        expect(k[2] === 0, `pose ${i} keypoint ${j} present on one device only`).toBe(ref[2] === 0);
        expectClose(k.slice(0, 2), ref.slice(0, 2), PIXELS, `pose ${i} keypoint ${j}`);
        expectClose([k[2]!], [ref[2]!], SCORE, `pose ${i} keypoint ${j} score`);
      }),
    );
  });

  it('recognizes the enrolled subject as the CPU does', async () => {
    const face = photo('dlib/faces/Tom_Cruise_avp_2014_4.jpg');
    for (const server of [gpu, cpu]) {
      const added = await call(server, '/trainer/add/?subject=tom', face);
      expect(added.json, server.url).toMatchObject({ success: 'true', subject: 'tom' });
    }
    const [g, c] = await Promise.all([call(gpu, '/recognizer/predict/', face), call(cpu, '/recognizer/predict/', face)]);
    expect(g.json['subject']).toBe('tom');
    expect(c.json['subject']).toBe('tom');
    expectClose(g.json['rect'] as number[], c.json['rect'] as number[], PIXELS, 'face used');
    // a distance on 0-273 (docs/http-api.md): the same photo is close to 0 on both
    expectClose([Number(g.json['confidence'])], [Number(c.json['confidence'])], 1, 'distance');
  });

  it('reports where each net runs to Prometheus, and the GPU runs', async () => {
    const metrics = await metricsOf(gpu);
    for (const net of ['faceDetector', 'faceEmbedder', 'poseEstimator', 'objectDetector', 'personDetector']) {
      expect(metrics).toContain(`edgecv_net_device{net="${net}",device="gpu",reason="agrees"} 1`);
    }
    const runs = Number(/^edgecv_engine_gpu_runs_total (\d+)/m.exec(metrics)?.[1]);
    expect(runs).toBeGreaterThan(0);
    expect(metrics).toMatch(/^edgecv_engine_gpu_fallback_runs_total 0$/m);
  });
});
