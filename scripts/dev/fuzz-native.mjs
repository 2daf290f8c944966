#!/usr/bin/env node
// Native fuzzing of the decode path (native/fuzz/decode_fuzzer.cc) with libFuzzer, for a bounded time.
//
//   npm run fuzz:native                  set-up with --fuzz (clang 14 and libFuzzer), then 120 s of fuzzing
//   node scripts/dev/fuzz-native.mjs --seconds 600 [--jobs 2]
//
// The target is built with clang (address and undefined-behaviour sanitizers) into .cache/fuzz-native/, again only
// when one of its sources changed. The seed corpus is generated here (small synthetic PNGs of every kind and
// JPEGs, no third-party photos); what libFuzzer adds to it is kept in .cache/fuzz-native/corpus between runs.
// Findings land in .cache/fuzz-native/findings/ and make the run exit 1. A summary goes to
// bench/results/fuzz-native.json.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { capture } from '../setup/shell.mjs';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORK = path.join(ROOT, '.cache', 'fuzz-native');
const SOURCES = [
  'native/fuzz/decode_fuzzer.cc',
  'native/image/image.cc',
  'native/image/jpeg_decoder.cc',
  'native/image/png_decoder.cc',
  'native/image/exif_orientation.cc',
  'native/models/letterbox.cc',
  'native/image/area_resize.cc', // the letterbox's shrink
  'native/runtime/recycled_buffers.cc',
];
const CXX = 'clang++-14';

function usage(message) {
  console.error(`${message}\nusage: node scripts/dev/fuzz-native.mjs [--seconds N] [--jobs N]`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { seconds: 120, jobs: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], Number(argv[i + 1])];
    if (!['--seconds', '--jobs'].includes(flag)) usage(`unknown argument: ${flag}`);
    if (!Number.isInteger(value) || value < 1 || value > 86_400) usage(`${flag} takes a whole number from 1 to 86400`);
    opts[flag.slice(2)] = value;
  }
  return opts;
}

function nativeFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => (e.isDirectory() ? nativeFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/** Builds the fuzz target unless the binary is newer than a build of the same sources and flags. */
function build() {
  const opencv = capture('pkg-config', ['--cflags', '--libs', 'opencv4', 'libjpeg', 'libpng']).split(/\s+/);
  const args = [
    '-std=c++17',
    '-g',
    '-O1',
    '-fsanitize=fuzzer,address,undefined',
    '-fno-sanitize-recover=undefined',
    '-Inative',
    ...SOURCES,
    ...opencv,
    '-o',
  ];
  const hash = createHash('sha256').update(args.join(' '));
  // Every native file: the sources include headers from across native/.
  for (const f of nativeFiles(path.join(ROOT, 'native'))) hash.update(f).update(fs.readFileSync(f));
  const digest = hash.digest('hex');
  const binary = path.join(WORK, 'decode_fuzzer');
  const stamp = path.join(WORK, 'decode_fuzzer.sha256');
  if (fs.existsSync(binary) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) {
    console.log('[fuzz-native] target: up to date');
    return binary;
  }
  console.log(`[fuzz-native] building ${path.relative(ROOT, binary)} with ${CXX}`);
  fs.mkdirSync(WORK, { recursive: true });
  const r = spawnSync(CXX, [...args, binary], { cwd: ROOT, stdio: 'inherit' });
  if (r.error || r.status !== 0) {
    console.error(`[fuzz-native] FAILED to build (${r.error?.message ?? `exit ${r.status}`}); run \`node scripts/setup/setup.mjs --fuzz\` first`);
    process.exit(1);
  }
  fs.writeFileSync(stamp, digest);
  return binary;
}

/** A small RGBA gradient of w x h: enough structure for the decoders to have something to chew on. */
function gradient(w, h) {
  const data = Buffer.alloc(w * h * 4);
  for (let i = 0; i < w * h; i++) data.set([(i * 7) % 256, (i * 13) % 256, (i * 29) % 256, 255], i * 4);
  return data;
}

/** PNG seeds of every kind, plain and interlaced, and with an eXIf orientation (testkit/fuzz/png-kinds.ts,
 * compiled into dist/ by set-up). */
async function pngKindSeeds() {
  const file = path.join(ROOT, 'dist', 'testkit', 'fuzz', 'png-kinds.js');
  if (!fs.existsSync(file)) {
    console.error(`[fuzz-native] FAILED: ${path.relative(ROOT, file)} is missing; run \`node scripts/setup/setup.mjs --fuzz\` first`);
    process.exit(1);
  }
  const { encodePng, exifChunk, pngKinds } = await import(pathToFileURL(file).href);
  const seeds = {};
  for (const interlace of [false, true]) {
    for (const [name, image] of Object.entries(pngKinds(13, 9, interlace))) seeds[`${interlace ? 'adam7-' : ''}${name}.png`] = encodePng(image);
  }
  const rgb = pngKinds(13, 9)['rgb-8'];
  seeds['rgb-8-exif-6.png'] = encodePng({ ...rgb, before: [exifChunk(6)] });
  seeds['rgb-8-exif-3-after.png'] = encodePng({ ...rgb, after: [exifChunk(3, 'MM')] });
  return seeds;
}

/** Seeds: each format the server takes, in a few shapes (colour types, odd sizes, 1-pixel strips). */
async function writeSeeds(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const seeds = await pngKindSeeds();
  for (const [w, h] of [
    [16, 16],
    [33, 7],
    [1, 64],
    [64, 1],
  ]) {
    const png = new PNG({ width: w, height: h });
    png.data = gradient(w, h);
    seeds[`rgba-${w}x${h}.png`] = PNG.sync.write(png);
    seeds[`gray-${w}x${h}.png`] = PNG.sync.write(png, { colorType: 0 });
    seeds[`rgb-${w}x${h}.jpg`] = jpeg.encode({ data: gradient(w, h), width: w, height: h }, 75).data;
  }
  for (const [name, bytes] of Object.entries(seeds)) fs.writeFileSync(path.join(dir, name), bytes);
  return Object.keys(seeds).length;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const binary = build();
  const seeds = path.join(WORK, 'seeds');
  const corpus = path.join(WORK, 'corpus');
  const findings = path.join(WORK, 'findings');
  for (const d of [corpus, findings]) fs.mkdirSync(d, { recursive: true });
  fs.rmSync(seeds, { recursive: true, force: true }); // made afresh: a seed this script no longer makes goes
  const seedCount = await writeSeeds(seeds);
  const args = [
    `-max_total_time=${opts.seconds}`,
    '-timeout=10', // one input decoding for 10 s is a finding (the server answers in under 2 s)
    '-rss_limit_mb=2560',
    '-malloc_limit_mb=1024', // one allocation over 1 GB for a 40-megapixel-bounded image is a finding
    '-max_len=262144',
    `-artifact_prefix=${findings}/`,
    '-print_final_stats=1',
    ...(opts.jobs > 1 ? [`-jobs=${opts.jobs}`, `-workers=${opts.jobs}`] : []),
    corpus,
    seeds,
  ];
  console.log(`[fuzz-native] ${seedCount} seeds, ${opts.seconds} s, ${opts.jobs} job(s): ${path.relative(ROOT, binary)} ${args.join(' ')}`);
  const t0 = Date.now();
  // libjpeg's and libpng's warnings on corrupt input go to stderr; they are kept out of the terminal.
  const r = spawnSync(binary, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 30, env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const stat = (name) => Number(new RegExp(`stat::${name}:\\s+(\\d+)`).exec(output)?.[1] ?? NaN);
  const found = fs.readdirSync(findings);
  const summary = {
    at: new Date().toISOString(),
    seconds: Math.round((Date.now() - t0) / 1000),
    exitCode: r.status,
    runs: stat('number_of_executed_units'),
    peakRssMb: stat('peak_rss_mb'),
    corpusFiles: fs.readdirSync(corpus).length,
    findings: found,
  };
  fs.writeFileSync(path.join(WORK, 'last-run.log'), output);
  fs.mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'bench', 'results', 'fuzz-native.json'), `${JSON.stringify(summary, null, 2)}\n`);
  console.log(`[fuzz-native] ${JSON.stringify(summary)}`);
  console.log(`[fuzz-native] full log: ${path.relative(ROOT, path.join(WORK, 'last-run.log'))}`);
  if (r.status !== 0 || found.length > 0) {
    console.error(
      `[fuzz-native] FINDINGS: libFuzzer exit ${r.status}; reproduce with ${path.relative(ROOT, binary)} <file in ${path.relative(ROOT, findings)}>`,
    );
    console.error(
      output
        .split('\n')
        .filter((l) => /ERROR|SUMMARY|==\d+==/.test(l))
        .slice(0, 30)
        .join('\n'),
    );
    process.exit(1);
  }
}

await main();
