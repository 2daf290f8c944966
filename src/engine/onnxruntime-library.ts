// Where the addon finds the onnxruntime shared library it dlopen()s: EDGECV_ONNXRUNTIME_LIB when set (e.g. a
// GPU build of onnxruntime), else the libonnxruntime.so.1 that the onnxruntime-node npm package ships for
// linux x64 and arm64. Nothing is copied or installed system-wide.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export const ONNXRUNTIME_LIB_ENV = 'EDGECV_ONNXRUNTIME_LIB';

/** The library file, or an explanation of why there is none (the engine then runs every model on OpenCV). */
export function findOnnxRuntimeLibrary(env: NodeJS.ProcessEnv = process.env): { path: string } | { missing: string } {
  const fromEnv = env[ONNXRUNTIME_LIB_ENV];
  if (fromEnv !== undefined && fromEnv !== '') {
    return fs.existsSync(fromEnv) ? { path: path.resolve(fromEnv) } : { missing: `${ONNXRUNTIME_LIB_ENV}=${fromEnv} does not exist` };
  }
  if (process.platform !== 'linux') return { missing: `the bundled onnxruntime is used on linux only (this is ${process.platform})` };
  let packageDir: string;
  try {
    packageDir = path.dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  } catch {
    return { missing: 'the onnxruntime-node package is not installed (run `npm run setup`)' };
  }
  const file = path.join(packageDir, 'bin', 'napi-v6', 'linux', process.arch, 'libonnxruntime.so.1');
  return fs.existsSync(file) ? { path: file } : { missing: `onnxruntime-node ships no library for linux ${process.arch} (${file})` };
}
