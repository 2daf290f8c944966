// JPEGs are decoded by libjpeg in the addon (native/image/jpeg_decoder.h) instead of cv::imdecode: EXIF orientation is
// applied as before, libjpeg's warnings on damaged data no longer reach stderr (one line
// per damaged image a client sends), and face detection decodes a large JPEG only as large as its detector needs. That the pixels equal imdecode's is checked by the native fuzz target
// (npm run fuzz:native), which decodes every undamaged JPEG both ways.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/index.js';
import { scaledJpeg } from '../testkit/vga-photos.js';
import { sharedEngine, photo, ROOT, useTempDirs } from './helpers.js';

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
    'extraneous bytes before EOI': Buffer.concat([
      jpeg.subarray(0, jpeg.length - 2),
      Buffer.from([0x12, 0x34, 0x56]),
      jpeg.subarray(jpeg.length - 2),
    ]),
    'cut in the scan': jpeg.subarray(0, Math.floor(jpeg.length * 0.8)),
  };
}

const newTmpDir = useTempDirs();
let engine: Engine;
beforeAll(async () => {
  engine = await sharedEngine({ workers: 1, poseModel: null, faceEmbedder: null });
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

  it("finds faces in a JPEG decoded at the size the detector needs, in the photo's own pixels, turned by EXIF too", async () => {
    // The same pixels as a 1280x1280 JPEG (decoded at a quarter: the whole-image pass sees 192 px) and as a PNG
    // (always decoded whole): the same face, in the same place.
    const raw = jpeg.decode(scaledJpeg(ROOT, 'skimage/astronaut.png', 1280).bytes, { useTArray: true });
    const asJpeg = Buffer.from(jpeg.encode(raw, 95).data);
    const png = new PNG({ width: raw.width, height: raw.height });
    png.data = Buffer.from(raw.data);
    const asPng = PNG.sync.write(png);
    const [fromJpeg, fromPng] = [await engine.detectFaces(asJpeg, { tiles: 0 }), await engine.detectFaces(asPng, { tiles: 0 })];
    expect([fromJpeg.width, fromJpeg.height]).toEqual([1280, 1280]);
    expect(fromJpeg.faces).toHaveLength(1);
    expect(fromPng.faces).toHaveLength(1);
    const [a, b] = [fromJpeg.faces[0]!, fromPng.faces[0]!];
    const side = b.rect[2] - b.rect[0];
    expect(side).toBeGreaterThan(200); // in 1280 px coordinates, not the decoded quarter's
    a.rect.forEach((v, i) => expect(Math.abs(v - b.rect[i]!), `rect[${i}]`).toBeLessThanOrEqual(0.03 * side));
    a.keypoints.forEach((v, i) => expect(Math.abs(v - b.keypoints[i]!), `keypoint value ${i}`).toBeLessThanOrEqual(0.03 * side));
    // EXIF orientation 6 (a quarter turn clockwise): the image is 1280 wide still (square) and the face moves to
    // (height - y, x), within what detecting a face lying on its side moves a box (a wrong scale-back would be off
    // by hundreds of pixels).
    const turned = await engine.detectFaces(withOrientation(asJpeg, 6), { tiles: 0 });
    expect(turned.faces).toHaveLength(1);
    const [l, t, r, bt] = turned.faces[0]!.rect;
    const [cx, cy] = [(b.rect[0] + b.rect[2]) / 2, (b.rect[1] + b.rect[3]) / 2];
    expect(Math.abs((l + r) / 2 - (1280 - cy))).toBeLessThanOrEqual(0.1 * side);
    expect(Math.abs((t + bt) / 2 - cx)).toBeLessThanOrEqual(0.1 * side);
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
      const engine = await Engine.open({ workers: 1, poseModel: null, objectDetector: null, faceEmbedder: null, warmUp: false });
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
