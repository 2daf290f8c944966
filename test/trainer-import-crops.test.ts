// /trainer/import/ checks a line's crop as enrolment would have made it: a crop over 448 px a side (or over its raw
// pixel size in bytes) is cut again from itself, as enrolment cuts a photo (the line's own embedding kept); a crop
// that is not a JPEG (header or container), or whose face box is outside it, is a 400 naming the line, and nothing is stored. Real
// engine, a real photo scaled up to a 5 MB crop, a real SQLite gallery.

import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJohns } from '../testkit/face-verification.js';
import { DEFAULT_BODY_LIMIT } from '../src/config.js';
import { STORED_CROP_MAX_BYTES, STORED_CROP_MAX_SIDE } from '../src/gallery/import-crop.js';
import { RecognitionService } from '../src/gallery/recognition-service.js';
import { SqliteGalleryStore } from '../src/gallery/sqlite-store.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { DATA_DIR, garbage, useTempDirs, sharedEngine } from './helpers.js';
import { expectError } from './support/http-api.js';

const KEY = 'test-admin-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };
const newTmpDir = useTempDirs();

let engine: Engine;
let service: RecognitionService;
let app: ReturnType<typeof createApp>;
/** One exported line of a real enrolment. */
let line: Record<string, unknown>;
/** The enrolled photo scaled up 5 times (nearest neighbour) with noise, as a quality-100 JPEG, and its face box. */
let bigCrop: Buffer;
let bigRect: number[];

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 }); // nothing here reads its stats or closes it
  service = await RecognitionService.open(engine, SqliteGalleryStore.open(newTmpDir('edgecv-gallery-')), { storeCrops: true, log: () => {} });
  await service.ready;
  app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT, adminKey: KEY }, recognition: service });
  const john = loadJohns(DATA_DIR)[0]!;
  await service.enrol('source', john.bytes);
  for await (const l of service.exportLines()) line = JSON.parse(l) as Record<string, unknown>;
  await service.remove('source');

  const img = jpeg.decode(john.bytes, { useTArray: true });
  const k = 5;
  const w = img.width * k;
  const h = img.height * k;
  const data = Buffer.alloc(w * h * 4);
  let seed = 7;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const from = (Math.floor(y / k) * img.width + Math.floor(x / k)) * 4;
      for (let c = 0; c < 3; c++) {
        seed = (seed * 1103515245 + 12345) >>> 0;
        data[(y * w + x) * 4 + c] = Math.max(0, Math.min(255, img.data[from + c]! + ((seed >>> 24) % 17) - 8));
      }
      data[(y * w + x) * 4 + 3] = 255;
    }
  }
  bigCrop = Buffer.from(jpeg.encode({ data, width: w, height: h }, 100).data);
  const face = (await engine.detectFaces(john.bytes)).faces[0]!;
  bigRect = face.rect.map((v) => Math.round(v * k));
});
afterAll(async () => {
  await service?.close();
});

/** The exported crop cut just before its first scan (SOS): a header that reads, no image data. */
function cutBeforeScan(): Buffer {
  const crop = Buffer.from(line['crop'] as string, 'base64');
  return crop.subarray(0, crop.indexOf(Buffer.from([0xff, 0xda])));
}

function importLines(lines: object[]) {
  return app.request('/trainer/import/', {
    method: 'POST',
    body: lines.map((l) => JSON.stringify(l)).join('\n'),
    headers: { 'content-type': 'application/x-ndjson', ...AUTH },
  });
}

describe('imported crops are bounded and checked as enrolment keeps them', () => {
  it('a crop over 448 px and over its byte bound is cut again to at most 448 px, the face box inside it, the embedding kept', async () => {
    expect(bigCrop.length).toBeGreaterThan(STORED_CROP_MAX_BYTES);
    const res = await importLines([{ ...line, subject: 'big', crop: bigCrop.toString('base64'), crop_rect: bigRect }]);
    expect(res.status).toBe(200);
    const listed = (await (await app.request('/trainer/samples/?subject=big', { headers: AUTH })).json()) as {
      samples: { crop: string; crop_rect: number[] }[];
    };
    expect(listed.samples).toHaveLength(1);
    const kept = Buffer.from(listed.samples[0]!.crop, 'base64');
    expect(kept.length).toBeLessThanOrEqual(STORED_CROP_MAX_BYTES);
    const decoded = jpeg.decode(kept);
    expect(Math.max(decoded.width, decoded.height)).toBeLessThanOrEqual(STORED_CROP_MAX_SIDE);
    const [l, t, r, b] = listed.samples[0]!.crop_rect;
    expect(l! >= 0 && t! >= 0 && r! <= decoded.width && b! <= decoded.height && l! < r! && t! < b!).toBe(true);
    let exported: Record<string, unknown> | undefined;
    for await (const x of service.exportLines()) exported = JSON.parse(x) as Record<string, unknown>;
    expect(exported!['embedding']).toBe(line['embedding']);
    await service.remove('big');
  });

  it('a crop that is not a JPEG, or a face box outside it: 400 naming the line, nothing stored', async () => {
    const png = Buffer.from('89504e470d0a1a0a', 'hex');
    const cases: [object, RegExp][] = [
      [{ ...line, subject: 'bad', crop: garbage(2000).toString('base64') }, /line 2: 'crop' is not a JPEG/],
      [{ ...line, subject: 'bad', crop: png.toString('base64') }, /line 2: 'crop' is not a JPEG/],
      [{ ...line, subject: 'bad', crop_rect: [0, 0, 2000, 2000] }, /line 2: 'crop_rect' .* is not inside the \d+x\d+ crop/],
      // a JPEG cut before its image data: the header reads, the container does not
      [{ ...line, subject: 'bad', crop: cutBeforeScan().toString('base64') }, /line 2: 'crop': invalid JPEG/],
    ];
    for (const [bad, re] of cases) {
      const res = await importLines([{ ...line, subject: 'good' }, bad]);
      expect(res.status).toBe(400);
      expectError(await res.json(), re);
      expect(service.subjects()).toEqual([]);
    }
  });
});
