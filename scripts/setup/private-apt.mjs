// A private apt state (its own source list, index lists and caches under a cache folder), so set-up can
// download single Debian packages or sources without root and without touching /etc/apt or /var/lib/apt.
// Used for the test photos (scripts/setup/test-data.mjs) and the onnxruntime headers (scripts/setup/onnxruntime.mjs).
//
// Plain Node ESM with no npm dependencies: it runs from scripts/setup/setup.mjs, possibly before `npm ci`.

import fs from 'node:fs';
import path from 'node:path';
import { run, StepError } from './shell.mjs';

/** Parses one-line (.list) and deb822 (.sources) apt source files into {types, uris, suites, components, signedBy}. */
export function parseAptSources(files) {
  const entries = [];
  for (const file of files) {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const fields = {};
        let last = null;
        for (const raw of stanza.split('\n')) {
          if (/^\s*#/.test(raw) || raw.trim() === '') continue;
          if (/^\s/.test(raw) && last) {
            fields[last] += '\n' + raw.trim();
            continue;
          }
          const m = /^([\w-]+):\s*(.*)$/.exec(raw);
          if (m) {
            last = m[1].toLowerCase();
            fields[last] = m[2].trim();
          }
        }
        if (!fields.types || !fields.uris || !fields.suites) continue;
        if (fields.enabled && /^(no|false|0)$/i.test(fields.enabled)) continue;
        const signedBy = fields['signed-by'] && !fields['signed-by'].includes('\n') ? fields['signed-by'] : undefined;
        entries.push({
          types: fields.types.split(/\s+/),
          uris: fields.uris.split(/\s+/),
          suites: fields.suites.split(/\s+/),
          components: (fields.components ?? '').split(/\s+/).filter(Boolean),
          signedBy,
        });
      }
    } else {
      for (const raw of text.split('\n')) {
        const line = raw.replace(/#.*/, '').trim();
        const m = /^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
        if (!m) continue;
        const opts = Object.fromEntries(
          (m[2] ?? '')
            .split(/\s+/)
            .filter(Boolean)
            .map((o) => {
              const i = o.indexOf('=');
              return [o.slice(0, i).toLowerCase(), o.slice(i + 1)];
            }),
        );
        entries.push({
          types: [m[1]],
          uris: [m[3]],
          suites: [m[4]],
          components: m[5].split(/\s+/).filter(Boolean),
          signedBy: opts['signed-by'],
        });
      }
    }
  }
  return entries;
}

function systemSourceFiles() {
  const files = ['/etc/apt/sources.list'];
  try {
    for (const f of fs.readdirSync('/etc/apt/sources.list.d').sort()) {
      if (f.endsWith('.list') || f.endsWith('.sources')) files.push(path.join('/etc/apt/sources.list.d', f));
    }
  } catch {
    /* none */
  }
  return files;
}

function osCodename() {
  try {
    const m = /^VERSION_CODENAME=["']?([^"'\n]+)/m.exec(fs.readFileSync('/etc/os-release', 'utf8'));
    return m?.[1];
  } catch {
    return undefined;
  }
}

/**
 * The system's main Debian suite as a private source list with deb and deb-src lines. `suite` names another
 * suite of the same archive (e.g. 'trixie' for a newer package's headers), with the same mirror and key.
 */
export function buildPrivateSourceList(suite) {
  const entries = parseAptSources(systemSourceFiles()).filter((e) => e.types.includes('deb'));
  const codename = osCodename();
  const candidates = [];
  for (const e of entries) {
    for (const suite of e.suites) {
      if (suite.includes('/')) continue; // flat repositories
      let score = 0;
      if (codename && suite === codename) score += 4;
      if (!suite.includes('-')) score += 2; // not -updates / -security / -backports
      if (e.components.includes('main')) score += 1;
      if (/security/i.test(e.uris[0])) score -= 8;
      candidates.push({ score, uri: e.uris[0], suite, components: e.components, signedBy: e.signedBy });
    }
  }
  candidates.sort((a, b) => b.score - a.score);
  const best = candidates[0];
  if (!best) throw new StepError('no `deb` source found in /etc/apt/sources.list or /etc/apt/sources.list.d/');
  const comps = best.components.includes('main') ? ['main'] : best.components;
  const opt = best.signedBy ? `[signed-by=${best.signedBy}] ` : '';
  return ['deb', 'deb-src'].map((t) => `${t} ${opt}${best.uri} ${suite ?? best.suite} ${comps.join(' ')}`).join('\n') + '\n';
}

export class PrivateApt {
  /**
   * @param {string} cacheDir
   * @param {{suite?: string, arch?: string, log?: (msg: string) => void}} [opts]  arch: a Debian architecture
   *   other than the host's (e.g. 'arm64'), for packages of that architecture only
   */
  constructor(cacheDir, opts = {}) {
    this.log = opts.log ?? console.log;
    this.label = `apt-get [private state in ${path.relative(process.cwd(), cacheDir) || cacheDir}]`;
    this.dir = cacheDir;
    this.list = path.join(cacheDir, 'src.list');
    this.lists = path.join(cacheDir, 'lists');
    this.updated = false;
    fs.mkdirSync(path.join(this.lists, 'partial'), { recursive: true });
    fs.mkdirSync(path.join(cacheDir, 'pkgcache'), { recursive: true });
    const want = buildPrivateSourceList(opts.suite);
    let have = '';
    try {
      have = fs.readFileSync(this.list, 'utf8');
    } catch {
      /* first time */
    }
    if (have !== want) {
      fs.writeFileSync(this.list, want);
      // stale indexes of another source list are useless
      for (const f of fs.readdirSync(this.lists)) if (f !== 'partial' && f !== 'lock') fs.rmSync(path.join(this.lists, f), { force: true });
    }
    this.opts = [
      '-o',
      `Dir::Etc::SourceList=${this.list}`,
      '-o',
      'Dir::Etc::SourceParts=/dev/null',
      '-o',
      `Dir::State::Lists=${this.lists}`,
      '-o',
      `Dir::Cache=${path.join(cacheDir, 'pkgcache')}`,
      '-o',
      'Dir::Cache::pkgcache=',
      '-o',
      'Dir::Cache::srcpkgcache=',
    ];
    if (opts.arch) this.opts.push('-o', `APT::Architecture=${opts.arch}`, '-o', `APT::Architectures=${opts.arch}`);
    if (process.getuid?.() === 0) this.opts.push('-o', 'APT::Sandbox::User=root');
  }

  hasLists() {
    return fs.readdirSync(this.lists).some((f) => /_(Sources|Packages)(\.\w+)?$/.test(f));
  }

  update() {
    if (this.updated) return;
    run('apt-get', [...this.opts, '-q', 'update'], { label: `${this.label} update`, log: this.log });
    this.updated = true;
  }

  /** Runs an apt-get command; on failure with stale (or no) lists, updates once and retries. */
  aptGet(args, opts = {}) {
    opts = { label: `${this.label} ${args.join(' ')}`, log: this.log, ...opts };
    if (!this.hasLists()) this.update();
    try {
      return run('apt-get', [...this.opts, ...args], opts);
    } catch (e) {
      if (this.updated) throw e;
      this.log('retrying after refreshing the package lists');
      this.update();
      return run('apt-get', [...this.opts, ...args], opts);
    }
  }
}

/**
 * The packages a fresh system of `apt`'s architecture installs for `packages` (recommends left out), as
 * {name, version}: apt's own resolution, simulated against an empty dpkg status so the host's installed packages
 * play no part.
 */
export function installClosure(apt, packages) {
  const status = path.join(apt.dir, 'empty-status');
  fs.writeFileSync(status, '');
  const r = apt.aptGet(['-o', `Dir::State::status=${status}`, '-q', '-s', 'install', '--no-install-recommends', ...packages], {
    capture: true,
    quiet: true,
  });
  const found = [...r.stdout.toString().matchAll(/^Inst (\S+) \((\S+) /gm)].map((m) => ({ name: m[1].replace(/:.*$/, ''), version: m[2] }));
  if (!found.length) throw new StepError(`apt-get -s install ${packages.join(' ')} listed nothing to install`);
  return found;
}

/** The .debs of exactly these {name, version} in debDir, downloaded in one apt-get call where absent. */
export function cachedDebs(apt, packages, debDir) {
  fs.mkdirSync(debDir, { recursive: true });
  // a .deb's name holds its version with the epoch's colon as %3a
  const fileOf = (p) => fs.readdirSync(debDir).find((f) => f.startsWith(`${p.name}_${p.version.replace(':', '%3a')}_`) && f.endsWith('.deb'));
  const missing = packages.filter((p) => !fileOf(p));
  if (missing.length) apt.aptGet(['-q', 'download', ...missing.map((p) => `${p.name}=${p.version}`)], { cwd: debDir });
  return packages.map((p) => {
    const f = fileOf(p);
    if (!f) throw new StepError(`apt-get download ${p.name}=${p.version} left no .deb in ${debDir}`);
    return path.join(debDir, f);
  });
}

/**
 * The cached .deb of `pkg` in debDir (`pkg_*.deb`), downloaded with `apt` when absent. apt checks the
 * download against the signed index; a cached file that later fails to unpack should be deleted by the caller.
 */
export function cachedDeb(apt, pkg, debDir) {
  fs.mkdirSync(debDir, { recursive: true });
  const find = () => fs.readdirSync(debDir).find((f) => f.startsWith(`${pkg}_`) && f.endsWith('.deb'));
  let deb = find();
  if (!deb) {
    apt.aptGet(['-q', 'download', pkg], { cwd: debDir });
    deb = find();
    if (!deb) throw new StepError(`apt-get download ${pkg} left no ${pkg}_*.deb in ${debDir}`);
  } else {
    apt.log(`using cached ${path.join(path.relative(process.cwd(), debDir), deb)}`);
  }
  return path.join(debDir, deb);
}
