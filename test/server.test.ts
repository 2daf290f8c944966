// HTTP API tests with the real engine and real photos (test/data, fetched by `node scripts/setup/setup.mjs --test`).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { createApp } from '../src/server/app.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { loadTls, TlsError } from '../src/server/tls.js';
import { garbage, httpsRequest, openEngine, photo, pngClaiming, ROOT, useTempDirs } from './helpers.js';
import { expectError } from './support/http-api.js';

import type { Engine } from '../src/index.js';

const DETECT = '/detector/detect/';
const TIME_RE = /^\d+\.\d{3}$/;
const FACE_PNG = 'skimage/astronaut.png'; // 512x512, one face
const FACE_JPG = 'dlib/faces/Tom_Cruise_avp_2014_4.jpg'; // 565x800, one face
// Faceless photos (test/face-detection.test.ts checks the detector on more of them).
const NO_FACE = ['skimage/motorcycle_left.png', 'skimage/rocket.jpg', 'darknet/giraffe.jpg', 'skimage/chelsea.png'];

const tmpDir = useTempDirs();

// ------------------------------------------------------------------ TLS (no engine needed)

describe('TLS certificate', () => {
  it('creates a self-signed certificate once, key mode 0600, and reuses it', async () => {
    const dataDir = tmpDir('edgecv-tls-');
    const first = await loadTls({ dataDir });
    expect(first.source).toBe('generated');
    expect(first.certPath).toBe(path.join(dataDir, 'tls', 'cert.pem'));
    expect(fs.statSync(first.keyPath).mode & 0o777).toBe(0o600);
    const x509 = new (await import('node:crypto')).X509Certificate(first.cert);
    expect(x509.subjectAltName).toMatch(/DNS:localhost/);
    expect(x509.subjectAltName).toMatch(/IP Address:127\.0\.0\.1/);
    const second = await loadTls({ dataDir });
    expect(second.source).toBe('reused');
    expect(second.cert).toBe(first.cert);
    expect(second.key).toBe(first.key);
  });

  it("takes the operator's files and checks that they match", async () => {
    const a = await loadTls({ dataDir: tmpDir('edgecv-tls-a-') });
    const b = await loadTls({ dataDir: tmpDir('edgecv-tls-b-') });
    const op = await loadTls({ dataDir: '/nonexistent', tlsCert: a.certPath, tlsKey: a.keyPath });
    expect(op.source).toBe('operator');
    expect(op.cert).toBe(a.cert);
    await expect(loadTls({ dataDir: '/x', tlsCert: a.certPath, tlsKey: b.keyPath })).rejects.toThrow(/does not match/);
    await expect(loadTls({ dataDir: '/x', tlsCert: '/nonexistent.pem', tlsKey: a.keyPath })).rejects.toThrow(TlsError);
  });
});

// ------------------------------------------------------------------ the API with the real engine

interface DetectJson {
  success: string;
  serverprocessingtime: string;
  server_processing_time: string;
  rects?: number[][];
  error?: string;
}

async function json(res: Response): Promise<DetectJson> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as DetectJson;
}

/** Checks the exact shape of a detection answer; returns the rects ([] for "no face"). */
function checkDetectShape(body: DetectJson, size: { width: number; height: number }): number[][] {
  expect(typeof body.success).toBe('string');
  expect(body.serverprocessingtime).toMatch(TIME_RE);
  expect(body.server_processing_time).toBe(body.serverprocessingtime);
  if (body.success === 'false') {
    expect(Object.keys(body)).toEqual(['success', 'serverprocessingtime', 'server_processing_time']);
    return [];
  }
  expect(body.success).toBe('true');
  expect(Object.keys(body)).toEqual(['success', 'serverprocessingtime', 'server_processing_time', 'rects']);
  expect(body.rects!.length).toBeGreaterThan(0);
  for (const r of body.rects!) {
    expect(r).toHaveLength(4);
    for (const v of r) expect(Number.isInteger(v)).toBe(true);
    const [l, t, rr, b] = r as [number, number, number, number];
    expect(0 <= l && l < rr && rr <= size.width).toBe(true);
    expect(0 <= t && t < b && b <= size.height).toBe(true);
  }
  return body.rects!;
}

describe('HTTP API (real engine, real photos)', () => {
  let engine: Engine;
  let app: ReturnType<typeof createApp>;
  let astronautRects: number[][];

  const post = (body: RequestInit['body'], contentType?: string, p = DETECT, extra: Record<string, string> = {}) =>
    app.request(p, { method: 'POST', body, headers: { ...(contentType ? { 'content-type': contentType } : {}), ...extra } });

  beforeAll(async () => {
    engine = await openEngine({ queueLimit: 64 });
    app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
  });
  afterAll(async () => {
    await engine?.close();
  });

  it('finds the face in a PNG sent raw as image/png, with the exact answer shape', async () => {
    const res = await post(photo(FACE_PNG), 'image/png');
    expect(res.status).toBe(200);
    const text = await res.clone().text();
    expect(text).toMatch(/^\{"success":"true","serverprocessingtime":"\d+\.\d{3}","server_processing_time":"\d+\.\d{3}","rects":\[\[/);
    astronautRects = checkDetectShape(await json(res), { width: 512, height: 512 });
    expect(astronautRects).toHaveLength(1);
    // the astronaut's face is in the upper middle of the picture
    const [l, t, r, b] = astronautRects[0] as [number, number, number, number];
    const cx = (l + r) / 2;
    const cy = (t + b) / 2;
    expect(cx).toBeGreaterThan(150);
    expect(cx).toBeLessThan(320);
    expect(cy).toBeGreaterThan(40);
    expect(cy).toBeLessThan(240);
    expect(r - l).toBeGreaterThan(50);
  });

  it('accepts the same route without the trailing slash', async () => {
    const res = await post(photo(FACE_PNG), 'image/png', '/detector/detect');
    expect(res.status).toBe(200);
    expect(checkDetectShape(await json(res), { width: 512, height: 512 })).toEqual(astronautRects);
  });

  for (const ct of ['image/jpg', 'image/jpeg', 'image/jpeg; charset=binary']) {
    it(`finds the face in a JPEG sent raw as ${ct}`, async () => {
      const res = await post(photo(FACE_JPG), ct);
      expect(res.status).toBe(200);
      const rects = checkDetectShape(await json(res), { width: 565, height: 800 });
      expect(rects.length).toBeGreaterThanOrEqual(1);
    });
  }

  it('tells PNG from JPEG by the bytes: a PNG sent as image/jpeg works', async () => {
    const res = await post(photo(FACE_PNG), 'image/jpeg');
    expect(res.status).toBe(200);
    expect(checkDetectShape(await json(res), { width: 512, height: 512 })).toEqual(astronautRects);
  });

  it('accepts multipart/form-data with a file part named image', async () => {
    const fd = new FormData();
    fd.append('other', 'x');
    fd.append('image', new Blob([photo(FACE_PNG)], { type: 'application/octet-stream' }), 'astronaut.png');
    const res = await post(fd);
    expect(res.status).toBe(200);
    expect(checkDetectShape(await json(res), { width: 512, height: 512 })).toEqual(astronautRects);
  });

  it('accepts multipart/form-data with a JPEG file part', async () => {
    const fd = new FormData();
    fd.append('image', new Blob([photo(FACE_JPG)], { type: 'image/jpeg' }), 'face.jpg');
    const res = await post(fd);
    expect(res.status).toBe(200);
    expect(checkDetectShape(await json(res), { width: 565, height: 800 }).length).toBeGreaterThanOrEqual(1);
  });

  describe('application/x-www-form-urlencoded base64', () => {
    const b64 = () => photo(FACE_PNG).toString('base64');
    const form = 'application/x-www-form-urlencoded';
    const cases: [string, () => string][] = [
      ['properly URL-encoded', () => `image=${encodeURIComponent(b64())}`],
      ['not URL-encoded (+ decodes to a space)', () => `a=1&image=${b64()}&b=2`],
      ['with + already turned into spaces', () => `image=${b64().replace(/\+/g, ' ')}`],
      ['with a data: URL prefix', () => `image=${encodeURIComponent(`data:image/png;base64,${b64()}`)}`],
      ['with a data: prefix, not URL-encoded', () => `image=data:image/png;base64,${b64()}`],
      ['with line breaks (MIME style)', () => `image=${encodeURIComponent(b64().replace(/.{76}/g, '$&\r\n'))}`],
    ];
    for (const [name, body] of cases) {
      it(name, async () => {
        expect(b64()).toContain('+'); // the photo's base64 does exercise the '+' repair
        const res = await post(body(), form);
        expect(res.status).toBe(200);
        expect(checkDetectShape(await json(res), { width: 512, height: 512 })).toEqual(astronautRects);
      });
    }
  });

  for (const name of NO_FACE) {
    it(`answers success "false" without rects on a faceless photo (${name})`, async () => {
      const res = await post(photo(name), name.endsWith('.png') ? 'image/png' : 'image/jpeg');
      expect(res.status).toBe(200);
      const body = await json(res);
      expect(body.success).toBe('false');
      expect(checkDetectShape(body, { width: 1e9, height: 1e9 })).toEqual([]);
      expect(body).not.toHaveProperty('rects');
    });
  }

  describe('errors', () => {
    it('400 when the image is missing', async () => {
      for (const res of [
        await post(null),
        await post(Buffer.alloc(0), 'image/png'),
        await post('a=1', 'application/x-www-form-urlencoded'),
        await post('image=', 'application/x-www-form-urlencoded'),
        await post(
          (() => {
            const f = new FormData();
            f.append('picture', new Blob([photo(FACE_PNG)]), 'a.png');
            return f;
          })(),
        ),
      ]) {
        expect(res.status).toBe(400);
        expectError(await json(res), /missing image/);
      }
    });

    it('400 when the bytes are no image', async () => {
      for (const ct of ['image/jpeg', 'image/png']) {
        const res = await post(garbage(), ct);
        expect(res.status).toBe(400);
        expectError(await json(res));
      }
    });

    it('400 when the image is truncated and cannot be decoded', async () => {
      for (const [name, ct] of [
        [FACE_PNG, 'image/png'],
        [FACE_JPG, 'image/jpeg'],
      ] as const) {
        const res = await post(photo(name).subarray(0, 600), ct);
        expect(res.status).toBe(400);
        expectError(await json(res));
      }
    });

    it('400 when the base64 or the form is malformed', async () => {
      const form = 'application/x-www-form-urlencoded';
      for (const body of ['image=%%%%', 'image=!!!!not*base64', 'image=data:image/png,rawtext']) {
        const res = await post(body, form);
        expect(res.status).toBe(400);
        expectError(await json(res));
      }
      const res = await post('--x\r\nContent-Disposition: form-data; name="image"\r\n\r\nabc', 'multipart/form-data; boundary=nope');
      expect(res.status).toBe(400);
      expectError(await json(res), /multipart/);
      const res2 = await post('whatever', 'multipart/form-data');
      expect(res2.status).toBe(400);
    });

    it('415 on an unsupported content type', async () => {
      for (const ct of ['text/plain', 'application/json', 'image/gif']) {
        const res = await post(photo(FACE_PNG), ct);
        expect(res.status).toBe(415);
        expectError(await json(res), /Content-Type/);
      }
    });

    it('413 when the body is over the limit (streamed, and by Content-Length up front)', async () => {
      const small = createApp({ engine, config: { bodyLimit: 100_000 } });
      const big = photo(FACE_PNG); // ~790 kB
      const res = await small.request(DETECT, { method: 'POST', body: big, headers: { 'content-type': 'image/png' } });
      expect(res.status).toBe(413);
      expectError(await json(res), /limit of 100000 bytes/);
      const res2 = await small.request(DETECT, {
        method: 'POST',
        body: big,
        headers: { 'content-type': 'image/png', 'content-length': String(big.length) },
      });
      expect(res2.status).toBe(413);
      // multipart and urlencoded bodies count too
      const fd = new FormData();
      fd.append('image', new Blob([big]), 'a.png');
      expect((await small.request(DETECT, { method: 'POST', body: fd })).status).toBe(413);
      // under the limit is fine
      const ok = await small.request(DETECT, {
        method: 'POST',
        body: photo('skimage/camera.png').subarray(0, 90_000),
        headers: { 'content-type': 'image/png' },
      });
      expect(ok.status).not.toBe(413);
    });

    it('413 when the image has too many pixels, decided from the header', async () => {
      const res = await post(pngClaiming(30000, 30000), 'image/png');
      expect(res.status).toBe(413);
      expectError(await json(res));
    });

    it('405 with Allow on a known path with the wrong method', async () => {
      const get = await app.request(DETECT);
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST, OPTIONS');
      expectError(await json(get), /GET/);
      const put = await app.request('/detector/detect', { method: 'PUT', body: 'x' });
      expect(put.status).toBe(405);
      const postTest = await app.request('/test/', { method: 'POST' });
      expect(postTest.status).toBe(405);
      expect(postTest.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      const delCaps = await app.request('/server/capabilities/', { method: 'DELETE' });
      expect(delCaps.status).toBe(405);
      expectError(await json(delCaps));
    });

    it('404 JSON on an unknown path', async () => {
      for (const p of ['/', '/nope', '/detector/', '/detector/detect/extra']) {
        const res = await app.request(p, { method: 'POST' });
        expect(res.status).toBe(404);
        expectError(await json(res), /no such path/);
      }
    });
  });

  it('GET and HEAD /test/ answer 200', async () => {
    for (const p of ['/test/', '/test']) {
      const get = await app.request(p);
      expect(get.status).toBe(200);
      const head = await app.request(p, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
    }
  });

  it('GET /server/capabilities/ tells whether the GPU is used, which runtime runs which model, and the object model', async () => {
    const res = await app.request('/server/capabilities/');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    // The original two keys come first, unchanged; the rest is added after them.
    expect(Object.keys(body).slice(0, 2)).toEqual(['success', 'gpu_support']);
    const model = engine.objectModel!;
    expect(body.object_model).toEqual({ name: model.name, kind: model.kind, input_size: model.inputSize, classes: 80, licence: model.licence });
    expect(model.licence).toMatch(/MIT|GPL/);
    expect(body.success).toBe('true');
    expect(body.gpu_support).toBe(engine.backend().backend === 'cuda');
    expect(typeof body.gpu_support).toBe('boolean');
    const backend = engine.backend();
    expect(body.backend).toBe(backend.backend);
    expect(body.onnxruntime).toBe(backend.onnxRuntime?.version ?? null);
    const models = body.models as Record<string, { name: string; runtime: string; precision: string }>;
    // Backend auto: every net on the CPU here. A machine with a Vulkan driver but only a software adapter (Debian's
    // mesa-vulkan-drivers, which libvulkan1 recommends, gives lavapipe) is told why, and one with none is not.
    const check = backend.gpuChecks?.faceDetector;
    expect(check === undefined || check.code === 'software', JSON.stringify(check)).toBe(true);
    expect(models.face_detection).toEqual({
      name: engine.models.faceDetector,
      runtime: backend.runtimes['faceDetector'],
      precision: 'fp32',
      device: 'cpu',
      ...(check ? { device_reason: check.reason } : {}),
    });
    if (check) expect(check.reason).toMatch(/software .*auto never uses it/);
    // The adapter, where one was found, is one no net runs on: none usable, or a software one.
    const gpu = body.gpu as { usable: boolean; software?: boolean } | null;
    expect(gpu === null || !gpu.usable || gpu.software === true, JSON.stringify(gpu)).toBe(true);
    // each model says its precision (docs/int8.md): the default object model runs its int8 file on onnxruntime
    expect(models.objects?.precision).toBe(backend.runtimes['objectDetector'] === 'onnxruntime' ? 'int8' : 'fp32');
    expect(Object.keys(models).length).toBe(Object.keys(backend.runtimes).length);
    for (const m of Object.values(models)) expect(['onnxruntime', 'opencv']).toContain(m.runtime);
  });
});

describe('overload (queueLimit 1)', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await openEngine({ workers: 1, queueLimit: 1 });
  });
  afterAll(async () => {
    await engine?.close();
  });

  it('answers 503 with Retry-After: 1 to a burst, and serves what fits', async () => {
    const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
    const img = photo('dlib/faces/bald_guys.jpg');
    const results = await Promise.all(
      Array.from({ length: 12 }, () => app.request(DETECT, { method: 'POST', body: img, headers: { 'content-type': 'image/jpeg' } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses).toContain(503);
    expect(statuses).toContain(200);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    for (const r of results.filter((x) => x.status === 503)) {
      expect(r.headers.get('retry-after')).toBe('1');
      expectError(await r.json(), /busy/);
    }
    // and it recovers once the burst is over
    const after = await app.request(DETECT, { method: 'POST', body: photo(FACE_PNG), headers: { 'content-type': 'image/png' } });
    expect(after.status).toBe(200);
  });
});

describe('HTTPS server on a socket', () => {
  let engine: Engine;
  let running: RunningServer;
  let ca: string;
  let agent: https.Agent;

  beforeAll(async () => {
    engine = await openEngine({ queueLimit: 64 });
    const tls = await loadTls({ dataDir: tmpDir('edgecv-https-') });
    ca = tls.cert;
    agent = new https.Agent({ keepAlive: true, maxSockets: 32, ca });
    running = await startServer({
      app: createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } }),
      tls,
      port: 0,
      host: '127.0.0.1',
    });
  });
  afterAll(async () => {
    agent?.destroy();
    await running?.close(1000);
    await engine?.close();
  });

  it('serves detection over HTTPS with the generated certificate (verified, not ignored)', async () => {
    expect(running.url).toBe(`https://127.0.0.1:${running.port}/`);
    const res = await httpsRequest(`${running.url}detector/detect/`, {
      method: 'POST',
      headers: { 'content-type': 'image/png' },
      body: photo(FACE_PNG),
      ca,
      agent,
    });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.text) as DetectJson;
    expect(checkDetectShape(body, { width: 512, height: 512 })).toHaveLength(1);
  });

  it('rejects a body over the limit from its Content-Length, before it is sent', async () => {
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = https.request(`${running.url}detector/detect/`, {
        method: 'POST',
        ca,
        headers: { 'content-type': 'image/jpeg', 'content-length': String(DEFAULT_BODY_LIMIT + 1) },
      });
      req.on('response', (r) => {
        let text = '';
        r.on('data', (d) => (text += d));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.write(Buffer.alloc(1024)); // the rest never comes
    });
    expect(res.status).toBe(413);
    expectError(JSON.parse(res.text), /limit/);
  });

  it('stays responsive: GET /test/ is answered while 20 detections are still in flight, not after them', async () => {
    const img = photo('dlib/faces/bald_guys.jpg'); // 1986x1545
    const burst = Array.from({ length: 20 }, () =>
      httpsRequest(`${running.url}detector/detect/`, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: img, ca, agent }),
    );
    let finished = 0;
    for (const b of burst)
      void b.then(
        () => finished++,
        () => finished++,
      );
    // probe /test/ from the start, every 25 ms, until the burst is over
    const probes: { ms: number; status: number; duringBurst: boolean }[] = [];
    while (finished < burst.length) {
      const p = await httpsRequest(`${running.url}test/`, { ca, agent });
      probes.push({ ms: p.ms, status: p.status, duringBurst: finished < burst.length });
      await new Promise((r) => setTimeout(r, 25));
    }
    const done = await Promise.all(burst);
    expect(done.map((d) => d.status)).toEqual(Array(20).fill(200));
    // No time is asserted (the machine may be loaded): the probes must come back between the detections, i.e.
    // the event loop is not held by them and /test/ does not queue behind them.
    expect(probes.filter((p) => p.duringBurst).length).toBeGreaterThan(0);
    for (const p of probes) expect(p.status).toBe(200);
    for (const d of done) checkDetectShape(JSON.parse(d.text) as DetectJson, { width: 1986, height: 1545 });
  });
});

describe('edgecv serve (the CLI)', () => {
  it('starts, prints its URL, answers, and stops cleanly on SIGTERM', async () => {
    const dataDir = tmpDir('edgecv-cli-');
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'dist/src/cli.js'), 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--workers', '1'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL printed within 120 s:\n${out}`)), 120_000);
        child.stdout.on('data', () => {
          const m = /listening on (https:\/\/\S+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        void exited.then((code) => reject(new Error(`exited ${code} before listening:\n${out}`)));
      });
      expect(fs.existsSync(path.join(dataDir, 'tls', 'cert.pem'))).toBe(true);
      const ca = fs.readFileSync(path.join(dataDir, 'tls', 'cert.pem'), 'utf8');
      const res = await httpsRequest(`${url}test/`, { ca });
      expect(res.status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toMatch(/stopped/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
