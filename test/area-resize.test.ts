// ResizeArea (native/models/area_resize.cc), the letterbox's and crops' shrink, must give exactly what
// cv::resize(..., INTER_AREA) gives: every model was measured and calibrated on OpenCV's output. The check program
// (native/checks/area_resize_check.cc) is built here against the system OpenCV the addon links, and compares both
// on 400 random images (sizes, views, targets drawn at random) and on real photos shrunk to the models' sizes.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { DATA_DIR, ROOT, useTempDirs } from './helpers.js';

const newTmpDir = useTempDirs();
const PHOTOS = ['darknet/person.jpg', 'darknet/kite.jpg', 'darknet/horses.jpg', 'skimage/astronaut.png', 'skimage/coffee.png'];

it('shrinks 8-bit colour images exactly as OpenCV INTER_AREA does', () => {
  const binary = path.join(newTmpDir('edgecv-area-'), 'area_resize_check');
  const opencv = execFileSync('pkg-config', ['--cflags', '--libs', 'opencv4'], { encoding: 'utf8' }).trim().split(/\s+/);
  const sources = ['native/checks/area_resize_check.cc', 'native/models/area_resize.cc'].map((f) => path.join(ROOT, f));
  execFileSync('g++', ['-std=c++17', '-O2', `-I${path.join(ROOT, 'native')}`, '-o', binary, ...sources, ...opencv], { stdio: 'pipe' });
  const run = spawnSync(binary, PHOTOS.map((p) => path.join(DATA_DIR, p)), { encoding: 'utf8' });
  expect(run.stderr.replace(/libpng warning[^\n]*\n?/g, '')).toBe('');
  expect(run.status).toBe(0);
  const result = JSON.parse(run.stdout) as { cases: number; mismatches: number };
  expect(result.mismatches).toBe(0);
  expect(result.cases).toBe(400 + PHOTOS.length * 7);
}, 120_000);
