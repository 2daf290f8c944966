// The native addon cross-compiled for linux/arm64: Debian's g++-aarch64-linux-gnu, run at the host's own speed,
// against the arm64 OpenCV, libjpeg and libpng of .cache/arm64-user/sysroot-opencv (scripts/arm64/arm64-user.mjs) and the same
// onnxruntime headers as the x64 build (.cache/onnxruntime/include: headers are the same on every CPU). Compiling
// under qemu-user instead would emulate every compiler process, many times slower for the same object files.
//
//   node scripts/arm64/arm64-addon.mjs      builds .cache/arm64-addon/build/Release/edgecv.node (cmake's own
//                                     dependency tracking skips it when nothing changed)
//
// cmake-js drives the build as it does for x64 (the same CMakeLists.txt), with a toolchain file that names the
// cross compiler. Debian's own OpenCVConfig.cmake (in libopencv-dev) requires every OpenCV module's package, the
// viz module's VTK among them; the addon links four, so this script writes a config package for those four.
// libjpeg's, libpng's and zlib's headers are linked into folders of their own: the sysroot's /usr/include would
// also put its C library headers ahead of the cross compiler's own.
//
// Plain Node ESM without npm dependencies.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureSysroot } from './arm64-user.mjs';
import { run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CACHE = path.join(ROOT, '.cache', 'arm64-addon');
const TRIPLET = 'aarch64-linux-gnu';
/** The OpenCV modules CMakeLists.txt asks for. */
const OPENCV_MODULES = ['core', 'imgproc', 'dnn', 'calib3d'];
const JPEG_HEADERS = ['jpeglib.h', 'jerror.h', 'jmorecfg.h'];

export function ensureCrossCompiler(log) {
  if (fs.existsSync(`/usr/bin/${TRIPLET}-g++`)) return;
  if (process.getuid?.() !== 0) throw new StepError(`${TRIPLET}-g++ is missing: apt-get install g++-${TRIPLET} (as root)`);
  run('apt-get', ['update', '-q'], { log });
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', `g++-${TRIPLET}`], {
    log,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

function openCvVersion(sysroot) {
  const header = fs.readFileSync(path.join(sysroot, 'usr', 'include', 'opencv4', 'opencv2', 'core', 'version.hpp'), 'utf8');
  const part = (p) => new RegExp(`#define\\s+CV_VERSION_${p}\\s+(\\d+)`).exec(header)?.[1];
  const version = ['MAJOR', 'MINOR', 'REVISION'].map(part);
  if (version.includes(undefined)) throw new StepError(`${sysroot}: no OpenCV version in opencv2/core/version.hpp`);
  return version.join('.');
}

/** Writes the toolchain file and the OpenCV config package (only when their text changes, so cmake keeps its cache). */
function writeCmakeFiles(sysroot) {
  const lib = path.join(sysroot, 'usr', 'lib', TRIPLET);
  const version = openCvVersion(sysroot);
  const files = {
    'toolchain.cmake': [
      "# linux/arm64 with Debian's cross compiler; libraries and headers from the arm64 sysroot (scripts/arm64/arm64-addon.mjs)",
      'set(CMAKE_SYSTEM_NAME Linux)',
      'set(CMAKE_SYSTEM_PROCESSOR aarch64)',
      `set(CMAKE_C_COMPILER ${TRIPLET}-gcc)`,
      `set(CMAKE_CXX_COMPILER ${TRIPLET}-g++)`,
      `set(CMAKE_FIND_ROOT_PATH ${sysroot})`,
      'set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)',
      'set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)',
      'set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)',
      'set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)',
      `set(CMAKE_LIBRARY_ARCHITECTURE ${TRIPLET})`,
      // the OpenCV libraries' own dependencies (protobuf, tbb, gdal...) are found there when the addon is linked
      `set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${lib} -Wl,-rpath-link,${path.join(sysroot, 'lib', TRIPLET)}")`,
    ],
    'opencv/OpenCVConfig.cmake': [
      `# OpenCV ${version} for linux/arm64 from the sysroot: the modules the addon links (scripts/arm64/arm64-addon.mjs)`,
      `set(OpenCV_VERSION ${version})`,
      `set(OpenCV_INCLUDE_DIRS ${path.join(sysroot, 'usr', 'include', TRIPLET, 'opencv4')} ${path.join(sysroot, 'usr', 'include', 'opencv4')})`,
      `set(OpenCV_LIBS ${OPENCV_MODULES.map((m) => path.join(lib, `libopencv_${m}.so`)).join(' ')})`,
      'set(OpenCV_FOUND TRUE)',
    ],
    'opencv/OpenCVConfigVersion.cmake': [
      `set(PACKAGE_VERSION ${version})`,
      'if(PACKAGE_FIND_VERSION_MAJOR EQUAL ' + version.split('.')[0] + ' AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)',
      '  set(PACKAGE_VERSION_COMPATIBLE TRUE)',
      'else()',
      '  set(PACKAGE_VERSION_COMPATIBLE FALSE)',
      'endif()',
      'if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)',
      '  set(PACKAGE_VERSION_EXACT TRUE)',
      'endif()',
    ],
  };
  for (const [name, lines] of Object.entries(files)) {
    const file = path.join(CACHE, name);
    const text = lines.join('\n') + '\n';
    fs.mkdirSync(path.dirname(file), { recursive: true });
    if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text) fs.writeFileSync(file, text);
  }
  const headers = (folder, files, pkg) => {
    const dir = path.join(CACHE, folder);
    fs.mkdirSync(dir, { recursive: true });
    for (const [h, from] of files) {
      if (!fs.existsSync(from)) throw new StepError(`${from} is missing: the sysroot lacks ${pkg}`);
      fs.rmSync(path.join(dir, h), { force: true });
      fs.symlinkSync(from, path.join(dir, h));
    }
    return dir;
  };
  const include = (h) => [h, path.join(sysroot, 'usr', 'include', h)];
  // libjpeg's with its multiarch jconfig.h beside them; libpng's and zlib's (FindPNG asks for zlib)
  const jpeg = headers(
    'jpeg-include',
    [...JPEG_HEADERS.map(include), ['jconfig.h', path.join(sysroot, 'usr', 'include', TRIPLET, 'jconfig.h')]],
    'libjpeg62-turbo-dev',
  );
  const png = headers(
    'png-include',
    ['png.h', 'pngconf.h', 'pnglibconf.h'].map((h) => [h, path.join(sysroot, 'usr', 'include', 'libpng16', h)]),
    'libpng-dev',
  );
  const zlib = headers('zlib-include', ['zlib.h', 'zconf.h'].map(include), 'zlib1g-dev');
  return {
    toolchain: path.join(CACHE, 'toolchain.cmake'),
    opencvDir: path.join(CACHE, 'opencv'),
    jpegInclude: jpeg,
    jpegLibrary: path.join(lib, 'libjpeg.so'),
    pngInclude: png,
    pngLibrary: path.join(lib, 'libpng16.so'),
    zlibInclude: zlib,
    // its libz.so is an absolute link (to /lib/...), dangling outside the sysroot: the library itself, by soname
    zlibLibrary: path.join(sysroot, 'lib', TRIPLET, 'libz.so.1'),
  };
}

/** Builds (or finds up to date) the arm64 addon; returns its path. */
export function buildArm64Addon({ log = console.log } = {}) {
  ensureCrossCompiler(log);
  const sysroot = ensureSysroot('sysroot-opencv', log);
  const cmake = writeCmakeFiles(sysroot);
  const out = path.join(CACHE, 'build');
  const defines = {
    CMAKE_TOOLCHAIN_FILE: cmake.toolchain,
    OpenCV_DIR: cmake.opencvDir,
    JPEG_INCLUDE_DIR: cmake.jpegInclude,
    JPEG_LIBRARY: cmake.jpegLibrary,
    PNG_PNG_INCLUDE_DIR: cmake.pngInclude,
    PNG_LIBRARY: cmake.pngLibrary,
    ZLIB_INCLUDE_DIR: cmake.zlibInclude,
    ZLIB_LIBRARY: cmake.zlibLibrary,
    EDGECV_ONNXRUNTIME_INCLUDE: path.join(ROOT, '.cache', 'onnxruntime', 'include'),
  };
  const cmakeJs = path.join(ROOT, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  const args = [cmakeJs, 'compile', '--out', out, '--arch', 'arm64', ...Object.entries(defines).map(([k, v]) => `--CD${k}=${v}`)];
  const parallel = process.env.CMAKE_BUILD_PARALLEL_LEVEL ?? String(os.availableParallelism?.() ?? os.cpus().length);
  run(process.execPath, args, { cwd: ROOT, log, env: { ...process.env, CMAKE_BUILD_PARALLEL_LEVEL: parallel } });
  const addon = path.join(out, 'Release', 'edgecv.node');
  // ELF e_machine (offset 18, little-endian): 183 is EM_AARCH64
  const machine = fs.existsSync(addon) ? fs.readFileSync(addon).readUInt16LE(18) : NaN;
  if (machine !== 183)
    throw new StepError(`${addon} is ${Number.isNaN(machine) ? 'missing' : `an ELF object for machine ${machine}, not aarch64 (183)`}`);
  return addon;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const t0 = Date.now();
    const addon = buildArm64Addon({ log: (m) => console.log(`[arm64-addon] ${m}`) });
    console.log(`[arm64-addon] ${path.relative(ROOT, addon)} (${Math.round((Date.now() - t0) / 1000)} s)`);
  } catch (e) {
    console.error(`[arm64-addon] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
    process.exit(1);
  }
}
