// Real clients, unchanged: each request below is written byte for byte the way the named client's public
// source sends it (the source is cited, never copied), against one real `edgecv serve` process, over its plain-HTTP
// listener (--http-port --http-routes all), as the original server's clients and the DeepStack clients speak it.
//   deepstack-python (Home Assistant's HASS-Deepstack-face): deepstack/core.py, post_image() and
//     get_stored_faces(): requests.post(url, files={"image": bytes}, data={"api_key": k, "min_confidence": 0.45})
//   DeepStack's Python SDK (deepstack-sdk) listFaces(): data={"api_key": None}, which requests drops: a bodyless POST
//   multi_client.py (mobiledgex/edge-cloud-sampleapps ComputerVisionServer/moedx/client): REST raw JPEG with
//     Content-Type image/jpeg and Mobiledgex-Debug, or --base64 urlencoded image plus -j params; WebSocket
//     ws://host:port/ws<endpoint> with one binary frame per image; reads only server_processing_time
//   server_tester.py (same folder): http:// only, urlencoded base64 image (+ params), non-200 is an error
//   the Android app (android/MobiledgeXSDKDemo .../ImageSender.java): /trainer/train/ and /trainer/remove/ as
//     urlencoded owner_name, owner_id, subject; any non-200 answer is a connection error
//   DeepStack's face match example (deepstack-docs): requests.post(url, files={"image1": a, "image2": b})
// Other DeepStack clients (Frigate, Double Take, node-deepstackai-trigger, Agent DVR) are replayed in deepstack.test.ts.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ConfigError, parseServerConfig } from '../src/config.js';
import { plainListenerNote } from '../src/server/serve.js';
import { DATA_DIR, photo, ROOT, useTempDirs } from './helpers.js';
import { loadJohns, type LabelledPhoto } from '../testkit/face-verification.js';
import { freePort, startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const newTmpDir = useTempDirs();
let server: ServerProcess;
let plainPort: number;
const johns = new Map<string, LabelledPhoto[]>();

beforeAll(async () => {
  for (const p of loadJohns(DATA_DIR)) johns.set(p.subject, [...(johns.get(p.subject) ?? []), p]);
  plainPort = await freePort();
  server = await startServerProcess([
    '--data-dir',
    newTmpDir('edgecv-client-replay-'),
    '--workers',
    '1',
    '--http-port',
    String(plainPort),
    '--http-routes',
    'all',
    '--no-warm-up', // nothing here times a first request
  ]);
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

interface Answer {
  status: number;
  text: string;
  json: Record<string, unknown>;
}

/** One request on its own connection to the plain listener, with exactly these headers (python-requests' own first). */
function send(route: string, body: Buffer | string | undefined, headers: Record<string, string | undefined> = {}): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: plainPort,
        path: route,
        method: 'POST',
        agent: false,
        // a header given as undefined is not sent at all
        headers: Object.fromEntries(
          Object.entries({
            'User-Agent': 'python-requests/2.28.1',
            'Accept-Encoding': 'gzip, deflate',
            Accept: '*/*',
            Connection: 'keep-alive',
            'Content-Length': String(payload?.length ?? 0),
            ...headers,
          }).filter((e): e is [string, string] => e[1] !== undefined),
        ),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // not JSON: the status and text tell
          }
          resolve({ status: res.statusCode ?? 0, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** requests' multipart body: the data fields, then each file part named by its key, without a part Content-Type. */
function requestsMultipart(data: Record<string, string>, files: Record<string, Buffer>): { body: Buffer; type: string } {
  const boundary = randomBytes(16).toString('hex');
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(data)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  for (const [k, v] of Object.entries(files)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"; filename="${k}"\r\n\r\n`), v, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` };
}

/** requests' urlencoded body (urllib's quote_plus: base64's + / = are escaped). */
function requestsUrlencoded(data: Record<string, string>): string {
  return Object.entries(data)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v).replace(/%20/g, '+')}`)
    .join('&');
}
const URLENCODED = { 'Content-Type': 'application/x-www-form-urlencoded' };

function johnsOf(name: string): LabelledPhoto[] {
  const list = johns.get(name);
  if (!list || list.length !== 11) throw new Error(`expected 11 photos of ${name}`);
  return list;
}

// ------------------------------------------------------------------ deepstack-python / Home Assistant (item 1)

interface DsFace {
  userid: string;
  confidence: number;
}

/** deepstack-python's DeepstackFace.recognize(): multipart image with api_key "" and min_confidence. */
async function recognize(bytes: Buffer, minConfidence: number): Promise<DsFace[]> {
  const { body, type } = requestsMultipart({ api_key: '', min_confidence: String(minConfidence) }, { image: bytes });
  const r = await send('/v1/vision/face/recognize', body, { 'Content-Type': type });
  expect(r.status).toBe(200);
  return r.json.predictions as DsFace[];
}

/** People in none of the enrolled photos nor in the calibration set: dlib's group photos and skimage's astronaut. */
const STRANGER_PHOTOS = [
  'dlib/faces/2008_002506.jpg',
  'dlib/faces/2009_004587.jpg',
  'dlib/faces/2008_001322.jpg',
  'dlib/faces/bald_guys.jpg',
  'skimage/astronaut.png',
];
const ENROLLED = ['John_Salley', 'John_Savage', 'John_Schneider'];

describe('deepstack-python as Home Assistant runs it (min_confidence 0.45, which it cannot change)', () => {
  it('registers three people with one photo each', async () => {
    for (const name of ENROLLED) {
      const { body, type } = requestsMultipart({ userid: name, api_key: '', min_confidence: '0.45' }, { image: johnsOf(name)[0]!.bytes });
      const r = await send('/v1/vision/face/register', body, { 'Content-Type': type });
      expect(r.json).toEqual({ success: true, message: 'face added', duration: 0 });
    }
    // get_registered_faces(): urlencoded api_key=""
    const list = await send('/v1/vision/face/list', requestsUrlencoded({ api_key: '' }), URLENCODED);
    expect(list.json).toEqual({ success: true, faces: ENROLLED, duration: 0 });
  });

  it('names no stranger at 0.45, and names the enrolled people right at 0.45 and 0.67', async () => {
    let strangers = 0;
    const named: string[] = [];
    for (const file of STRANGER_PHOTOS) {
      for (const f of await recognize(photo(file), 0.45)) {
        strangers++;
        if (f.userid !== 'unknown') named.push(`${file}: ${f.userid} ${f.confidence.toFixed(3)}`);
        else expect(f.confidence).toBe(0);
      }
    }
    expect(strangers).toBeGreaterThanOrEqual(15);
    // the bound is 5% of strangers; with the straight line of before, nearly all of them were named
    expect(named.length, named.join('\n')).toBeLessThanOrEqual(Math.floor(0.05 * strangers));

    let genuine = 0;
    const right = { 0.45: 0, 0.67: 0 };
    for (const name of ENROLLED) {
      for (const p of johnsOf(name).slice(1, 5)) {
        genuine++;
        for (const t of [0.45, 0.67] as const) {
          const [face] = await recognize(p.bytes, t);
          if (face!.userid === name) right[t]++;
          if (face!.userid === name) expect(face!.confidence).toBeGreaterThanOrEqual(t);
        }
      }
    }
    // the decision at 0.67 is the distance 105 rule, as before: every one of these is named right
    expect(right[0.67]).toBe(genuine);
    expect(right[0.45]).toBe(genuine);
  }, 60_000);
});

// ------------------------------------------------------------------ node-deepstackai-trigger

describe('node-deepstackai-trigger (src/DeepStack.ts: request.post({ formData: { image: fs.createReadStream(file) } }))', () => {
  it("posts form-data's multipart (file name and MIME type, no api_key) to /v1/vision/detection", async () => {
    // form-data's boundary: 26 dashes and 24 digits; the part names the file's base name and its MIME type
    const boundary = `--------------------------${'0123456789'.repeat(3).slice(0, 24)}`;
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="dog.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`),
      photo('darknet/dog.jpg'),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const r = await send('/v1/vision/detection', body, {
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
      'User-Agent': undefined,
      'Accept-Encoding': undefined,
      Accept: undefined,
      Connection: 'close',
    });
    expect(r.status).toBe(200);
    const predictions = r.json.predictions as { label: string; confidence: number; x_min: number }[];
    // it reads label, confidence (x 100 against its own threshold) and the box
    expect(predictions.map((p) => p.label)).toContain('dog');
    for (const p of predictions) expect(p.confidence).toBeGreaterThanOrEqual(0.4);
  });
});

// ------------------------------------------------------------------ list routes with no form (item 7)

describe('the list routes read no form, as DeepStack', () => {
  it('DeepStack SDK listFaces(): a POST without Content-Type or body gets the list', async () => {
    const r = await send('/v1/vision/face/list', undefined);
    expect(r.status).toBe(200);
    expect(r.json.success).toBe(true);
    expect(Array.isArray(r.json.faces)).toBe(true);
  });

  it('an empty POST to /v1/vision/custom/list gets the models, the same as docs/http-api.md says', async () => {
    const r = await send('/v1/vision/custom/list', undefined);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ success: true, models: ['yolov5s'], duration: 0 });
    // the HTTP reference's example row of /v1/vision/custom/list shows this very answer
    const reference = fs.readFileSync(path.join(ROOT, 'docs', 'http-api.md'), 'utf8');
    const row = reference.split('\n').find((l) => l.startsWith('| `/v1/vision/custom/list` |'));
    expect(row).toContain(`\`${r.text}\``);
  });

  it('a detection route still wants its image', async () => {
    const r = await send('/v1/vision/detection', undefined);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ success: false, error: 'No valid image file found' });
  });
});

// ------------------------------------------------------------------ multi_client.py, plain HTTP and ws:// (items 4, 5)

const TIME = /^\d+\.\d{3}$/;

describe('multi_client.py over http:// and ws:// (--http-routes all)', () => {
  it('REST: every endpoint it allows answers over plain HTTP, with server_processing_time', async () => {
    const cases: [string, string][] = [
      ['/detector/detect/', 'skimage/astronaut.png'],
      ['/object/detect/', 'darknet/dog.jpg'],
      ['/pose/detect/', 'darknet/person.jpg'],
      ['/openpose/detect/', 'darknet/person.jpg'],
    ];
    for (const [endpoint, file] of cases) {
      const r = await send(endpoint, photo(file), { 'Content-Type': 'image/jpeg', 'Mobiledgex-Debug': 'true' });
      expect(r.status, `${endpoint}: ${r.text}`).toBe(200);
      expect(r.json.success, endpoint).toBe('true');
      expect(r.json.server_processing_time, endpoint).toMatch(TIME);
      expect(Number.isFinite(Number(r.json.server_processing_time))).toBe(true);
    }
  }, 60_000);

  it('WebSocket: ws://host:port/ws<endpoint>, one binary frame, the answer has server_processing_time', async () => {
    for (const [endpoint, file] of [
      ['/object/detect/', 'darknet/dog.jpg'],
      ['/openpose/detect/', 'darknet/person.jpg'],
    ] as const) {
      const ws = new WebSocket(`ws://127.0.0.1:${plainPort}/ws${endpoint}`);
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      const answer = new Promise<string>((resolve, reject) => {
        ws.once('message', (data: Buffer) => resolve(data.toString('utf8')));
        ws.once('error', reject);
      });
      ws.send(photo(file), { binary: true });
      const body = JSON.parse(await answer) as Record<string, unknown>;
      ws.close();
      expect(body.success, endpoint).toBe('true');
      expect(body.server_processing_time, endpoint).toMatch(TIME);
    }
  }, 60_000);
});

describe('--http-routes', () => {
  it("is 'deepstack' or 'all', and goes with --http-port", () => {
    expect(parseServerConfig(['--http-port', '5000', '--http-routes', 'all'], {}).httpRoutes).toBe('all');
    expect(parseServerConfig(['--http-port', '5000'], {}).httpRoutes).toBeUndefined();
    expect(() => parseServerConfig(['--http-port', '5000', '--http-routes', 'everything'], {})).toThrow(ConfigError);
    expect(() => parseServerConfig(['--http-routes', 'all'], {})).toThrow(/--http-routes goes with --http-port/);
  });

  it('says what the listener serves; all of it beyond loopback comes with a warning', () => {
    const url = 'http://localhost:5000/';
    expect(plainListenerNote({ host: '0.0.0.0' }, url)).toEqual({ log: `edgecv: DeepStack API (/v1/vision/*) over plain HTTP on ${url}` });
    for (const host of ['127.0.0.1', '::1', 'localhost']) expect(plainListenerNote({ host, httpRoutes: 'all' }, url).warning).toBeUndefined();
    for (const host of ['0.0.0.0', '::', '192.0.2.7'])
      expect(plainListenerNote({ host, httpRoutes: 'all' }, url).warning).toMatch(/^edgecv: WARNING: --http-routes all/);
    // the real server of this file: loopback, so the note and no warning
    expect(server.output()).toContain(`every route (WebSockets included) over plain HTTP on http://127.0.0.1:${plainPort}/`);
    expect(server.output()).not.toContain('WARNING');
  });
});

// ------------------------------------------------------------------ the training server's answers (item 6)

describe('the original training server: /trainer/add/, /train/, /predict/, /remove/ as its clients send them', () => {
  const owner = { owner_name: 'John Simm', owner_id: '1234567890' };

  it('add (multi_client.py --base64 -j): no face or two faces is a 200 with success "false" and the reason', async () => {
    for (const [file, reason] of [
      ['skimage/rocket.jpg', 'No face detected'],
      ['dlib/faces/2008_002506.jpg', 'More than 1 face'],
    ] as const) {
      const r = await send(
        '/trainer/add/',
        requestsUrlencoded({ image: photo(file).toString('base64'), subject: 'John_Simm', ...owner }),
        URLENCODED,
      );
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ success: 'false', reason });
      expect(r.json.server_processing_time).toMatch(TIME);
    }
  });

  it('add with a face: success "true" and the face as "rects", then train, predict and remove answer 200', async () => {
    const simm = johnsOf('John_Simm');
    const add = await send(
      '/trainer/add/',
      requestsUrlencoded({ image: simm[0]!.bytes.toString('base64'), subject: 'John_Simm', ...owner }),
      URLENCODED,
    );
    expect(add.status, add.text).toBe(200);
    expect(add.json.success).toBe('true');
    expect(add.json.rects).toEqual([add.json.rect]);

    // the Android app's trainerTrain(): urlencoded owner_name, owner_id, subject
    const train = await send('/trainer/train/', requestsUrlencoded({ ...owner, subject: 'John_Simm' }), URLENCODED);
    expect(train.status, train.text).toBe(200);
    expect(train.json.success).toBe('true');
    expect(train.json.server_processing_time).toMatch(TIME);

    // multi_client.py -e /trainer/predict/ (raw JPEG) and server_tester.py (urlencoded base64)
    const raw = await send('/trainer/predict/', simm[3]!.bytes, { 'Content-Type': 'image/jpeg', 'Mobiledgex-Debug': 'true' });
    const b64 = await send('/trainer/predict/', requestsUrlencoded({ image: simm[4]!.bytes.toString('base64') }), URLENCODED);
    for (const r of [raw, b64]) {
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ success: 'true', subject: 'John_Simm' });
      expect(Number(r.json.confidence)).toBeLessThan(105);
      expect(r.json.server_processing_time).toMatch(TIME);
    }

    // the Android app's trainerRemove()
    const remove = await send('/trainer/remove/', requestsUrlencoded({ ...owner, subject: 'John_Simm' }), URLENCODED);
    expect(remove.status, remove.text).toBe(200);
    expect(remove.json.success).toBe('true');
  }, 60_000);
});

// ------------------------------------------------------------------ DeepStack's face match example (issue 38)

// The DeepStack documentation's Python example (the johnolafenwa/deepstack-docs repository, face-match/index.rst):
// requests.post(url, files={"image1": image_data1, "image2": image_data2}).json(): two file parts filed under
// their own names, no data fields, no key; it prints the answer, whose success and similarity it documents.
describe("DeepStack's face match example, byte for byte", () => {
  async function match(one: Buffer, two: Buffer): Promise<Answer> {
    const { body, type } = requestsMultipart({}, { image1: one, image2: two });
    return send('/v1/vision/face/match', body, { 'Content-Type': type });
  }

  it('answers success and a similarity higher for the same person than for two people', async () => {
    const same = await match(johnsOf('John_Simm')[0]!.bytes, johnsOf('John_Simm')[6]!.bytes);
    const different = await match(johnsOf('John_Simm')[0]!.bytes, johnsOf('John_Shimkus')[0]!.bytes);
    for (const r of [same, different]) {
      expect(r.status).toBe(200);
      expect(Object.keys(r.json)).toEqual(['success', 'similarity', 'inferenceMs', 'processMs', 'duration']);
      expect(r.json.success).toBe(true);
      expect(r.json.duration).toBe(0);
    }
    expect(same.json.similarity as number).toBeGreaterThan(different.json.similarity as number);
  });
});
