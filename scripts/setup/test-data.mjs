#!/usr/bin/env node
// Test photos for edgecv, taken from Debian packages (never committed: test/data/ is git-ignored).
//
//   node scripts/setup/test-data.mjs                   fetch what is missing, verify against test/data.manifest.json
//   node scripts/setup/test-data.mjs --write-manifest  fetch everything and (re)write test/data.manifest.json
//
// Plain Node ESM with no npm dependencies: it runs from scripts/setup/setup.mjs, possibly before `npm ci`.
// apt runs with a private state under .cache/apt (its own source list, index lists and caches), built
// from the URIs of the system's configured `deb` sources, so nothing under /etc/apt or /var/lib/apt is
// touched and no root is needed.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FACELESS_SOURCES } from './faceless-photos.mjs';
import { cachedDeb, PrivateApt } from './private-apt.mjs';
import { run as runStep, StepError } from './shell.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What goes where. Manifest keys are paths relative to test/data. */
export const SOURCES = [
  {
    id: 'darknet',
    kind: 'deb',
    pkg: 'darknet',
    from: 'usr/share/darknet/data',
    files: ['person.jpg', 'dog.jpg', 'horses.jpg', 'giraffe.jpg', 'eagle.jpg', 'kite.jpg', 'scream.jpg'],
  },
  {
    id: 'skimage',
    kind: 'deb',
    pkg: 'python3-skimage',
    from: 'usr/lib/python3/dist-packages/skimage/data',
    files: ['astronaut.png', 'coffee.png', 'chelsea.png', 'camera.png', 'motorcycle_left.png', 'rocket.jpg'],
  },
  {
    // dlib's Debian source package: examples/faces (PASCAL VOC group photos with training.xml/testing.xml
    // face boxes) and examples/johns (5 people x 11 face crops).
    id: 'dlib',
    kind: 'source',
    pkg: 'dlib',
    // the main upstream tarball, not the ~200 MB "orig-dlib-models" component
    tarball: /^[^_]+_[^_]+\.orig\.tar\.(bz2|xz|gz)$/,
    dirs: ['examples/faces', 'examples/johns'],
  },
  ...FACELESS_SOURCES,
];

const log = (msg) => console.log(`[test-data] ${msg}`);

function sha256File(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Runs a command; on failure throws with the exact command line. */
const run = (cmd, args, opts = {}) => runStep(cmd, args, { log, ...opts });

function walkFiles(dir, base = dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walkFiles(p, base, out);
    else if (e.isFile()) out.push(path.relative(base, p).split(path.sep).join('/'));
  }
  return out.sort();
}

// ---------------------------------------------------------------- fetching

function extractDeb(apt, src, cacheDir, tmp) {
  const debPath = cachedDeb(apt, src.pkg, path.join(cacheDir, 'debs'));
  const tarStream = run('dpkg-deb', ['--fsys-tarfile', debPath], { capture: true, quiet: true });
  const members = src.files.map((f) => `./${src.from}/${f}`);
  try {
    run('tar', ['-x', '-C', tmp, ...members], { input: tarStream.stdout, quiet: true });
  } catch (e) {
    // a cached .deb may be outdated or damaged: drop it so the next run downloads it again
    fs.rmSync(debPath, { force: true });
    throw new StepError(`${e.message} (members ${members.join(' ')} of ${debPath})`);
  }
  const out = new Map();
  for (const f of src.files) out.set(`${src.id}/${f}`, path.join(tmp, src.from, f));
  return out;
}

async function extractSource(apt, src, cacheDir, tmp) {
  const r = apt.aptGet(['-q', 'source', '--download-only', '--print-uris', src.pkg], { capture: true });
  const lines = r.stdout.toString().split('\n');
  let hit;
  for (const l of lines) {
    const m = /^'([^']+)'\s+(\S+)\s+(\d+)\s+SHA256:([0-9a-f]{64})/.exec(l);
    if (m && src.tarball.test(m[2])) hit = { uri: m[1], name: m[2], size: Number(m[3]), sha256: m[4] };
  }
  if (!hit) throw new StepError(`apt-get source --print-uris ${src.pkg} listed no file matching ${src.tarball}`);
  const srcDir = path.join(cacheDir, 'sources');
  fs.mkdirSync(srcDir, { recursive: true });
  const file = path.join(srcDir, hit.name);
  if (fs.existsSync(file) && sha256File(file) === hit.sha256) {
    log(`using cached ${path.join('.cache/apt/sources', hit.name)}`);
  } else {
    log(`fetching ${hit.uri} (${(hit.size / 1e6).toFixed(1)} MB)`);
    let res;
    try {
      res = await fetch(hit.uri);
    } catch (e) {
      throw new StepError(`fetch ${hit.uri} failed: ${e.cause?.message ?? e.message}`);
    }
    if (!res.ok) throw new StepError(`fetch ${hit.uri} failed: HTTP ${res.status}`);
    const buf = Buffer.from(await res.arrayBuffer());
    const got = createHash('sha256').update(buf).digest('hex');
    if (got !== hit.sha256) throw new StepError(`sha256 mismatch for ${hit.uri}: got ${got}, apt says ${hit.sha256}`);
    fs.writeFileSync(file + '.part', buf);
    fs.renameSync(file + '.part', file);
  }
  run('tar', ['-x', '-f', file, '-C', tmp, '--wildcards', ...src.dirs.map((d) => `*/${d}/*`)], { quiet: true });
  const top = fs.readdirSync(tmp).find((d) => fs.existsSync(path.join(tmp, d, src.dirs[0])));
  if (!top) throw new StepError(`${hit.name} has no ${src.dirs[0]}`);
  const out = new Map();
  for (const d of src.dirs) {
    const base = path.join(tmp, top, d);
    for (const rel of walkFiles(base)) out.set(`${src.id}/${path.basename(d)}/${rel}`, path.join(base, rel));
  }
  return out;
}

// ---------------------------------------------------------------- verification

function readManifest(file) {
  const m = JSON.parse(fs.readFileSync(file, 'utf8'));
  return m.files ?? m;
}

function stampOf(dataDir, manifestText, names) {
  const files = {};
  for (const n of names) {
    const st = fs.statSync(path.join(dataDir, n));
    files[n] = [st.size, Math.round(st.mtimeMs)];
  }
  return { manifest: createHash('sha256').update(manifestText).digest('hex'), files };
}

function sourceOf(name) {
  return SOURCES.find((s) => name.startsWith(`${s.id}/`));
}

/**
 * Makes test/data complete and valid. Returns the number of files.
 * @param {{root?: string, writeManifest?: boolean}} [opts]
 */
export async function ensureTestData(opts = {}) {
  const root = opts.root ?? ROOT;
  const dataDir = path.join(root, 'test', 'data');
  const manifestFile = path.join(root, 'test', 'data.manifest.json');
  const stampFile = path.join(dataDir, '.stamp.json');
  const cacheDir = path.join(root, '.cache', 'apt');

  let manifest = null;
  let manifestText = '';
  if (!opts.writeManifest) {
    manifestText = fs.readFileSync(manifestFile, 'utf8');
    manifest = readManifest(manifestFile);
    const names = Object.keys(manifest);
    // fast path: same manifest, same sizes and mtimes as when last verified
    try {
      const stamp = JSON.parse(fs.readFileSync(stampFile, 'utf8'));
      if (JSON.stringify(stamp) === JSON.stringify(stampOf(dataDir, manifestText, names))) {
        log(`test photos: ${names.length} files present and verified`);
        return names.length;
      }
    } catch {
      /* no stamp or a file missing: verify below */
    }
  }

  // which sources need (re)fetching
  const need = new Set();
  if (opts.writeManifest) for (const s of SOURCES) need.add(s);
  else {
    for (const [name, sha] of Object.entries(manifest)) {
      const src = sourceOf(name);
      if (!src) throw new StepError(`test/data.manifest.json: ${name} belongs to no known source`);
      const p = path.join(dataDir, name);
      if (!fs.existsSync(p) || sha256File(p) !== sha) need.add(src);
    }
  }

  if (need.size > 0) {
    log(`test photos: fetching ${[...need].map((s) => `${s.kind === 'source' ? 'source package ' : ''}${s.pkg}`).join(', ')}`);
    fs.mkdirSync(cacheDir, { recursive: true });
    const apt = new PrivateApt(cacheDir, { log });
    for (const src of need) {
      const tmp = fs.mkdtempSync(path.join(cacheDir, `extract-${src.id}-`));
      try {
        const files = src.kind === 'deb' ? extractDeb(apt, src, cacheDir, tmp) : await extractSource(apt, src, cacheDir, tmp);
        fs.rmSync(path.join(dataDir, src.id), { recursive: true, force: true });
        for (const [name, from] of files) {
          const to = path.join(dataDir, name);
          fs.mkdirSync(path.dirname(to), { recursive: true });
          fs.copyFileSync(from, to);
        }
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    }
  } else {
    log('test photos: all present, re-verified');
  }

  if (opts.writeManifest) {
    const files = {};
    for (const name of walkFiles(dataDir)) if (sourceOf(name)) files[name] = sha256File(path.join(dataDir, name));
    manifestText = JSON.stringify(files, null, 2) + '\n';
    fs.writeFileSync(manifestFile, manifestText);
    manifest = files;
    log(`wrote ${path.relative(root, manifestFile)} (${Object.keys(files).length} files)`);
  }

  const bad = [];
  for (const [name, sha] of Object.entries(manifest)) {
    const p = path.join(dataDir, name);
    if (!fs.existsSync(p)) bad.push(`${name}: missing`);
    else {
      const got = sha256File(p);
      if (got !== sha) bad.push(`${name}: sha256 ${got}, manifest says ${sha}`);
    }
  }
  if (bad.length) {
    throw new StepError(`test photos do not match test/data.manifest.json:\n  ${bad.join('\n  ')}`);
  }
  fs.writeFileSync(stampFile, JSON.stringify(stampOf(dataDir, manifestText, Object.keys(manifest))));
  log(`test photos: ${Object.keys(manifest).length} files verified`);
  return Object.keys(manifest).length;
}

export { StepError };

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--write-manifest');
  if (unknown.length) {
    console.error(`usage: node scripts/setup/test-data.mjs [--write-manifest]   (unknown: ${unknown.join(' ')})`);
    process.exit(2);
  }
  try {
    await ensureTestData({ writeManifest: args.includes('--write-manifest') });
  } catch (e) {
    console.error(`[test-data] ERROR: ${e instanceof StepError ? e.message : e.stack}`);
    process.exit(1);
  }
}
