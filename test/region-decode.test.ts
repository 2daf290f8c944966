// Recognition and enrolment decode a JPEG twice where the detector's view of it is DCT-scaled: the view, then the
// photo at its own size for the crops, and that second time only the rows and columns the crops read
// (native/image/photo_pixels.h, image/jpeg_decoder.h). Checked here at both ends:
// - the check program (native/checks/region_decode_check.cc): every chroma subsampling, grey, CMYK, restart markers,
//   progressive, the eight EXIF orientations and the test photos, each decoded whole and in random regions, pixel for
//   pixel; the crops around random faces against the whole decode's; and with too small a crop margin, mismatches;
// - the engine: embedFace on a JPEG answers exactly what it answers on a PNG of the same pixels (decoded whole) with
//   the same face given, embedding, crop bytes, sharpness and tilt, while decoding only part of the photo again.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Engine, FaceEmbeddingResult } from '../src/index.js';
import { jpegOf, onCanvas } from '../testkit/degraded-photos.js';
import { loadJohns } from '../testkit/face-verification.js';
import { rotatedPhoto } from './support/turned-photos.js';
import { decode, VGA_FACE_PHOTO, vgaJpeg } from '../testkit/vga-photos.js';
import { rotateRgba } from '../testkit/rotate-photo.js';
import { DATA_DIR, ROOT, sharedEngine, useTempDirs } from './helpers.js';
import { checkProgram } from './support/check-program.js';

interface CheckReport {
  regions: number;
  regionMismatches: number;
  crops: number;
  cropMismatches: number;
  photos: number;
  first: string[];
}

const newTmpDir = useTempDirs();
let checkBinary: string;

beforeAll(() => {
  const libs = execFileSync('pkg-config', ['--cflags', '--libs', 'opencv4', 'libjpeg'], { encoding: 'utf8' }).trim().split(/\s+/);
  const sources = [
    'checks/region_decode_check.cc',
    'image/jpeg_decoder.cc',
    'image/exif_orientation.cc',
    'image/photo_pixels.cc',
    'image/area_resize.cc',
    'runtime/recycled_buffers.cc',
    'models/crop.cc',
    'models/face_alignment.cc',
    'models/face_sharpness.cc',
  ];
  checkBinary = checkProgram('region_decode_check', sources, ['-O1'], libs);
}, 300_000);

function runCheck(args: string[]): CheckReport {
  const run = spawnSync(checkBinary, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as CheckReport;
}

const dlibFaces = () =>
  fs
    .readdirSync(path.join(DATA_DIR, 'dlib', 'faces'))
    .filter((f) => f.endsWith('.jpg'))
    .sort()
    .map((f) => path.join(DATA_DIR, 'dlib', 'faces', f));

describe('the partial JPEG decode against the whole one (native/checks/region_decode_check.cc)', () => {
  it('gives the whole decode’s pixels in every region asked, black elsewhere, and the same crops', () => {
    // Photos of both chroma subsamplings the packages hold (dlib's 4:2:0, darknet's 4:4:0).
    const photos = [...dlibFaces().slice(0, 3), path.join(DATA_DIR, 'darknet', 'person.jpg'), path.join(DATA_DIR, 'darknet', 'horses.jpg')];
    const report = runCheck(photos);
    expect(report.first).toEqual([]);
    expect(report.regionMismatches).toBe(0);
    expect(report.cropMismatches).toBe(0);
    expect(report.photos).toBe(photos.length);
    // 9 kinds x 8 orientations x 3 sizes x 12 regions, and 40 regions and 40 faces' crops a photo
    expect(report.regions).toBe(9 * 8 * 3 * 12 + 40 * photos.length);
    expect(report.crops).toBeGreaterThan(200 * photos.length);
  });

  it('differs at a crop’s edge columns without its margin: the margin is what makes it exact', () => {
    for (const margin of ['0']) {
      const report = runCheck(['--crop-margin', margin]);
      expect(report.regionMismatches, `margin ${margin}`).toBeGreaterThan(0);
      expect(
        report.first.some((f) => f.endsWith('pixels differ')),
        `margin ${margin}`,
      ).toBe(true);
    }
  });
});

describe('embedFace decodes a JPEG again only around the face, with the answers of a whole decode', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await sharedEngine();
  }, 300_000);

  /** Each photo's whole decode by the addon's own decoder, as a PNG (decoded whole by the engine, never in part). */
  function pngsOfDecodes(jpegs: Buffer[]): Buffer[] {
    const dir = newTmpDir('edgecv-region-decode-');
    const args = jpegs.flatMap((jpeg, i) => {
      fs.writeFileSync(path.join(dir, `${i}.jpg`), jpeg);
      return [path.join(dir, `${i}.png`), path.join(dir, `${i}.jpg`)];
    });
    execFileSync(checkBinary, ['--png', ...args]);
    return jpegs.map((_, i) => fs.readFileSync(path.join(dir, `${i}.png`)));
  }

  /** embedFace on each JPEG, and on the PNG of its pixels with the face it found given: the pairs of answers. */
  async function bothWays(jpegs: Buffer[]): Promise<[FaceEmbeddingResult, FaceEmbeddingResult | null][]> {
    const pngs = pngsOfDecodes(jpegs);
    const out: [FaceEmbeddingResult, FaceEmbeddingResult | null][] = [];
    for (const [i, jpeg] of jpegs.entries()) {
      const fromJpeg = await engine.embedFace(jpeg, { keepCrop: true });
      const found = fromJpeg.faces[0];
      out.push([fromJpeg, found ? await engine.embedFace(pngs[i]!, { rect: found.rect, keypoints: found.keypoints, keepCrop: true }) : null]);
    }
    return out;
  }

  function expectSameAnswer(name: string, a: FaceEmbeddingResult, b: FaceEmbeddingResult) {
    expect(b.face!.rect, name).toEqual(a.face!.rect);
    expect(Array.from(b.embedding!), name).toEqual(Array.from(a.embedding!));
    expect(b.crop!.jpeg.equals(a.crop!.jpeg), `${name}: the stored crop's bytes`).toBe(true);
    expect(b.crop!.rect, name).toEqual(a.crop!.rect);
    expect(b.face!.sharpness, name).toBe(a.face!.sharpness);
    expect(b.face!.rotation, name).toBe(a.face!.rotation);
    expect(b.timings.decodes, `${name}: the PNG is decoded once, whole`).toBe(1);
    expect(b.timings.decodedShare, name).toBe(1);
  }

  it('on the bench’s 640x480 photo, dlib’s faces, johns small in a camera frame and johns turned 30 degrees', async () => {
    const johns = loadJohns(DATA_DIR).filter((_, i) => i % 8 === 0);
    const cases: [string, Buffer][] = [
      ['640x480 astronaut', vgaJpeg(ROOT, VGA_FACE_PHOTO)],
      ...dlibFaces()
        .filter((_, i) => i % 2 === 0)
        .map((f): [string, Buffer] => [path.basename(f), fs.readFileSync(f)]),
      ...johns.map((p): [string, Buffer] => [`${path.basename(p.file)} on 960x720`, jpegOf(onCanvas(decode(p.file), 960, 720))]),
      ...johns.slice(0, 4).map((p): [string, Buffer] => [`${path.basename(p.file)} turned 30`, rotatedPhoto(p.file, 30)]),
    ];
    let compared = 0;
    let partial = 0;
    for (const [k, [fromJpeg, fromWhole]] of (await bothWays(cases.map(([, jpeg]) => jpeg))).entries()) {
      const name = cases[k]![0];
      if (!fromWhole) continue;
      expectSameAnswer(name, fromJpeg, fromWhole);
      compared++;
      if (fromJpeg.timings.decodedShare < 1) partial++;
      // One decode for the detector's view and, where it is smaller than the photo, one for every crop.
      expect(fromJpeg.timings.decodes, name).toBeLessThanOrEqual(2);
      if (fromJpeg.timings.decodedShare < 1) expect(fromJpeg.timings.decodes, name).toBe(2);
    }
    expect(compared).toBeGreaterThanOrEqual(cases.length - 2);
    expect(partial, 'photos decoded again only in part').toBeGreaterThanOrEqual(compared / 2);
  }, 300_000);

  it('decodes the whole photo again when only a second pass finds the face, and answers as a whole decode does', async () => {
    // Turned 60 degrees, most johns are found only by the turned passes, which look at the whole photo.
    let whole = 0;
    const johns = loadJohns(DATA_DIR).filter((_, i) => i % 9 === 0);
    const jpegs = johns.map((p) => jpegOf(onCanvas(rotateRgba(decode(p.file), 60), 960, 720)));
    for (const [k, [fromJpeg, fromWhole]] of (await bothWays(jpegs)).entries()) {
      if (!fromWhole) continue;
      expectSameAnswer(`${path.basename(johns[k]!.file)} turned 60`, fromJpeg, fromWhole);
      if (fromJpeg.timings.decodedShare === 1) whole++;
    }
    expect(whole, 'faces found by a second pass, on the whole photo').toBeGreaterThan(0);
    const faceless = await engine.embedFace(vgaJpeg(ROOT, 'darknet/dog.jpg'));
    expect(faceless.face).toBeNull();
    expect(faceless.timings.decodedShare, 'a photo with no face is searched whole by the second passes').toBe(1);
  }, 120_000);
});
