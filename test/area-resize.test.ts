// ResizeArea (native/image/area_resize.cc), the letterbox's and crops' shrink, must give exactly what
// cv::resize(..., INTER_AREA) gives: every model was measured and calibrated on OpenCV's output. The check program
// (native/checks/area_resize_check.cc) is built here (test/support/check-program.ts) against the system OpenCV the addon links, and compares both
// on 400 random images (sizes, views, targets drawn at random) and on real photos shrunk to the models' sizes.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { DATA_DIR } from './helpers.js';
import { checkProgram } from './support/check-program.js';

const PHOTOS = ['darknet/person.jpg', 'darknet/kite.jpg', 'darknet/horses.jpg', 'skimage/astronaut.png', 'skimage/coffee.png'];

it('shrinks 8-bit colour images exactly as OpenCV INTER_AREA does', () => {
  const opencv = execFileSync('pkg-config', ['--cflags', '--libs', 'opencv4'], { encoding: 'utf8' }).trim().split(/\s+/);
  const binary = checkProgram('area_resize_check', ['checks/area_resize_check.cc', 'image/area_resize.cc'], ['-O2'], opencv);
  const run = spawnSync(
    binary,
    PHOTOS.map((p) => path.join(DATA_DIR, p)),
    { encoding: 'utf8' },
  );
  expect(run.stderr.replace(/libpng warning[^\n]*\n?/g, '')).toBe('');
  expect(run.status).toBe(0);
  const result = JSON.parse(run.stdout) as { cases: number; mismatches: number };
  expect(result.mismatches).toBe(0);
  expect(result.cases).toBe(400 + PHOTOS.length * 7);
}, 120_000);
