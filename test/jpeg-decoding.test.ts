// JPEGs are decoded by libjpeg in the addon (native/jobs/jpeg_decoder.h) instead of cv::imdecode: EXIF orientation is
// applied as before, and libjpeg's warnings on damaged data no longer reach stderr (one line
// per damaged image a client sends). That the pixels equal imdecode's is checked by the native fuzz target
// (npm run fuzz:native), which decodes every undamaged JPEG both ways.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/index.js';
import { openEngine, photo, ROOT, useTempDirs } from './helpers.js';

const PERSON = photo('darknet/person.jpg'); // 640x424

/** The JPEG with an APP1 EXIF segment (little-endian TIFF, one IFD0 entry: Orientation) right after SOI. */
function withOrientation(jpeg: Buffer, orientation: number): Buffer {
  const tiff = Buffer.alloc(26);
  tiff.write('II', 0, 'latin1');
  tiff.writeUInt16LE(42, 2);
  tiff.writeUInt32LE(8, 4); // IFD0 right after the header
  tiff.writeUInt16LE(1, 8); // one entry
  tiff.writeUInt16LE(0x0112, 10); // Orientation
  tiff.writeUInt16LE(3, 12); // SHORT
  tiff.writeUInt32LE(1, 14); // count
  tiff.writeUInt16LE(orientation, 18);
  tiff.writeUInt32LE(0, 22); // no next IFD
  const payload = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const segment = Buffer.alloc(4);
  segment.writeUInt16BE(0xffe1, 0);
  segment.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), segment, payload, jpeg.subarray(2)]);
}

/** Damaged but decodable: garbage before the final EOI marker, and the file cut in its scan data. */
function damaged(jpeg: Buffer): Record<string, Buffer> {
  return {
    'extraneous bytes before EOI': Buffer.concat([jpeg.subarray(0, jpeg.length - 2), Buffer.from([0x12, 0x34, 0x56]), jpeg.subarray(jpeg.length - 2)]),
    'cut in the scan': jpeg.subarray(0, Math.floor(jpeg.length * 0.8)),
  };
}

const newTmpDir = useTempDirs();
let engine: Engine;
beforeAll(async () => {
  engine = await openEngine({ workers: 1, poseModel: null, faceEmbedder: null });
});
afterAll(async () => {
  await engine?.close();
});

describe('JPEG decoding in the addon', () => {
  it('applies EXIF orientation: 6 turns the photo a quarter, 3 half a turn', async () => {
    const upright = await engine.detectObjects(PERSON);
    expect([upright.width, upright.height]).toEqual([640, 424]);
    // The centre of the best person box.
    const person = (r: typeof upright) => {
      const best = r.objects.filter((o) => o.className === 'person').sort((a, b) => b.score - a.score)[0];
      expect(best).toBeDefined();
      const [l, t, rt, b] = best!.rect;
      return { x: (l + rt) / 2, y: (t + b) / 2 };
    };
    const p = person(upright);

    const quarter = await engine.detectObjects(withOrientation(PERSON, 6));
    expect([quarter.width, quarter.height]).toEqual([424, 640]);

    const half = await engine.detectObjects(withOrientation(PERSON, 3));
    expect([half.width, half.height]).toEqual([640, 424]);
    const h = person(half);
    // Turned half a turn: the person's box is mirrored on both axes (within a few pixels of re-detection).
    expect(Math.abs(h.x - (640 - p.x))).toBeLessThan(12);
    expect(Math.abs(h.y - (424 - p.y))).toBeLessThan(12);
  });

  it('decodes damaged JPEGs without libjpeg printing on stderr, and still refuses undecodable ones', () => {
    const dir = newTmpDir('edgecv-jpeg-');
    const cases = { ...damaged(PERSON), 'no scan at all': PERSON.subarray(0, 700) };
    const files = Object.entries(cases).map(([name, bytes], i) => {
      const file = path.join(dir, `${i}.jpg`);
      fs.writeFileSync(file, bytes);
      return [name, file] as const;
    });
    // A child process: libjpeg writes to file descriptor 2, which only a parent can read.
    const child = `
      const { Engine } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'src', 'index.js'))});
      const fs = await import('node:fs');
      const engine = await Engine.open({ workers: 1, poseModel: null, objectDetector: null, faceEmbedder: null });
      const out = [];
      for (const file of process.argv.slice(1)) {
        try {
          const r = await engine.detectFaces(fs.readFileSync(file));
          out.push({ width: r.width, height: r.height });
        } catch (e) {
          out.push({ code: e.code });
        }
      }
      await engine.close();
      console.log(JSON.stringify(out));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', child, ...files.map(([, f]) => f)], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const results = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Array<Record<string, unknown>>;
    expect(results).toHaveLength(files.length);
    expect(Object.fromEntries(files.map(([name], i) => [name, results[i]]))).toEqual({
      'extraneous bytes before EOI': { width: 640, height: 424 },
      'cut in the scan': { width: 640, height: 424 },
      'no scan at all': { code: 'INVALID_IMAGE' },
    });
    expect(r.stderr).not.toMatch(/Corrupt JPEG data|Premature end of JPEG file|JPEG/);
  });
});
