// onnxruntime for the native addon: the C/C++ API headers at build time, the library at run time.
//
//   headers  Debian's libonnxruntime-dev from the trixie suite of the same archive (bookworm has none), fetched
//            through a private apt state under .cache/onnxruntime (apt checks the .deb against the signed index)
//            and unpacked to .cache/onnxruntime/include. Only headers are used: trixie binaries do not run here.
//   library  libonnxruntime.so.1 shipped inside the onnxruntime-node npm package (an ordinary dependency); the
//            addon dlopen()s it at run time (src/engine/onnxruntime-library.ts finds it), so nothing is copied.
//
// The C API is versioned: headers of API version N work against any library of version >= N through
// OrtGetApiBase()->GetApi(N). The addon is compiled against these headers' ORT_API_VERSION.
//
// Plain Node ESM with no npm dependencies: it runs from scripts/setup/setup.mjs, possibly before `npm ci`.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { cachedDeb, PrivateApt } from './private-apt.mjs';
import { run as runStep, StepError } from './shell.mjs';

const PACKAGE = 'libonnxruntime-dev';
const SUITE = 'trixie';
/** Oldest C API version the addon's code uses (ORT_API_VERSION of onnxruntime 1.21). */
export const MIN_ORT_API_VERSION = 21;
const HEADERS = ['onnxruntime_c_api.h', 'onnxruntime_cxx_api.h', 'onnxruntime_cxx_inline.h', 'onnxruntime_float16.h'];

const log = (msg) => console.log(`[onnxruntime] ${msg}`);
const run = (cmd, args, opts = {}) => runStep(cmd, args, { log, ...opts });

function digestOf(dir) {
  const h = createHash('sha256');
  for (const f of fs.readdirSync(dir).sort()) h.update(f + '\0').update(fs.readFileSync(path.join(dir, f)));
  return h.digest('hex');
}

/** ORT_API_VERSION declared by a c_api header, or NaN. */
function apiVersion(header) {
  const m = /#define\s+ORT_API_VERSION\s+(\d+)/.exec(fs.readFileSync(header, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/**
 * Makes <root>/.cache/onnxruntime/include/onnxruntime_*.h present and checked. Returns that folder.
 * A stamp records the sha256 of the unpacked headers, so a damaged or edited set is fetched again.
 */
export function ensureOnnxRuntimeHeaders({ root }) {
  const cacheDir = path.join(root, '.cache', 'onnxruntime');
  const includeDir = path.join(cacheDir, 'include');
  const stampFile = path.join(cacheDir, 'headers.sha256');
  const complete = () => HEADERS.every((h) => fs.existsSync(path.join(includeDir, h)));
  if (complete() && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8').trim() === digestOf(includeDir)) {
    log(`headers: ${path.relative(root, includeDir)} present and verified`);
    return includeDir;
  }
  log(`headers: fetching ${PACKAGE} from Debian ${SUITE}`);
  const apt = new PrivateApt(path.join(cacheDir, 'apt'), { suite: SUITE, log });
  const debDir = path.join(cacheDir, 'debs');
  const deb = cachedDeb(apt, PACKAGE, debDir);
  const tmp = fs.mkdtempSync(path.join(cacheDir, 'extract-'));
  try {
    const tarStream = run('dpkg-deb', ['--fsys-tarfile', deb], { capture: true, quiet: true });
    try {
      run('tar', ['-x', '-C', tmp, '--wildcards', './usr/include/onnxruntime/*'], { input: tarStream.stdout, quiet: true });
    } catch (e) {
      fs.rmSync(deb, { force: true }); // damaged or outdated cache: the next run downloads it again
      throw new StepError(`${e.message} (unpacking ${deb})`);
    }
    const from = path.join(tmp, 'usr', 'include', 'onnxruntime');
    const missing = HEADERS.filter((h) => !fs.existsSync(path.join(from, h)));
    if (missing.length) throw new StepError(`${path.basename(deb)} has no ${missing.join(', ')}`);
    const version = apiVersion(path.join(from, 'onnxruntime_c_api.h'));
    if (!(version >= MIN_ORT_API_VERSION)) {
      throw new StepError(`${path.basename(deb)} declares ORT_API_VERSION ${version}; the addon needs >= ${MIN_ORT_API_VERSION}`);
    }
    fs.rmSync(includeDir, { recursive: true, force: true });
    fs.mkdirSync(includeDir, { recursive: true });
    for (const f of fs.readdirSync(from, { withFileTypes: true })) {
      if (f.isFile()) fs.copyFileSync(path.join(from, f.name), path.join(includeDir, f.name));
    }
    fs.writeFileSync(stampFile, digestOf(includeDir) + '\n');
    log(`headers: ${path.basename(deb)} (ORT_API_VERSION ${version}) unpacked to ${path.relative(root, includeDir)}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return includeDir;
}
