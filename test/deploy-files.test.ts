// deploy/ is never run here (no container runtime, no cluster), so this test keeps it honest: every file is parsed
// (YAML with the yaml package; the Dockerfile and haproxy.cfg line by line) and each flag and EDGECV_* variable a
// container is given goes through the server's own option parser, each probe and health-check path is asked of the
// real app, ports agree with the defaults, and the resource figures are docs/fleet.md's measured ones. The same
// checker fails on modified copies (a flag that does not exist, a probe path that is no route, a wrong port).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT, DEFAULT_PORT, parseServerConfig, SERVER_OPTIONS, type ServerConfig } from '../src/config.js';
import { parseConsoleArgs } from '../src/console/command.js';
import { DEFAULT_CONSOLE_PORT } from '../src/console/usage.js';
import type { Engine } from '../src/index.js';
import { createApp } from '../src/server/app.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../src/server/drain.js';
import { generateSelfSigned } from '../src/server/tls.js';
import { sharedEngine, ROOT, useTempDirs } from './helpers.js';

const DEPLOY = path.join(ROOT, 'deploy');
const tempDir = useTempDirs();
const SERVER_ENV = new Set(Object.values(SERVER_OPTIONS).map((o) => o.env));
/** Variables a container may set that are not server options. */
const OTHER_ENV = new Set(['NODE_ENV']);

/** Every file under deploy/, by path relative to it. */
function readDeploy(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else files.set(path.relative(DEPLOY, full), fs.readFileSync(full, 'utf8'));
    }
  };
  walk(DEPLOY);
  return files;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strings = (v: unknown): string[] => list(v).map(String);

interface Checks {
  /** Status the real app answers GET `path` with. */
  status(path: string): Promise<number>;
  /** docs/fleet.md */
  docs: string;
}

/** The server config a container's arguments and environment make, or the problem with them. */
function serveConfig(where: string, args: string[], env: Record<string, string>, problems: string[]): ServerConfig | undefined {
  for (const name of Object.keys(env)) {
    if (!SERVER_ENV.has(name) && !OTHER_ENV.has(name)) problems.push(`${where}: environment variable ${name} is no server option`);
  }
  try {
    return parseServerConfig(args, env, '/');
  } catch (e) {
    problems.push(`${where}: ${(e as Error).message}`);
    return undefined;
  }
}

/** Compose's ${VAR...} interpolation, with a stand-in value. */
const interpolated = (v: unknown) => String(v).replace(/\$\{[^}]*\}/g, 'stand-in');

async function routeProblem(where: string, route: string, checks: Checks): Promise<string | undefined> {
  const status = await checks.status(route);
  // readiness may answer 503; a route that is not there answers 404
  return status === 200 || status === 503 ? undefined : `${where}: ${route} is no route of the server (GET answers ${status})`;
}

/** A docs/fleet.md figure: the table row `| name | value |`. */
function docsFigure(docs: string, name: string): string | undefined {
  return new RegExp(`^\\|\\s*\`?${name.replace(/\./g, '\\.')}\`?\\s*\\|\\s*([^|]+?)\\s*\\|`, 'm').exec(docs)?.[1];
}

const mebibytes = (q: string) => {
  const m = /^(\d+)(Mi|Gi)$/.exec(q);
  return m ? Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1) : NaN;
};

async function checkCompose(
  file: string,
  text: string,
  checks: Checks,
  problems: string[],
): Promise<{ httpPorts: Set<number>; drainDelaysMs: number[] }> {
  const httpPorts = new Set<number>();
  const drainDelaysMs: number[] = [];
  const compose = obj(parseAllDocuments(text, { merge: true })[0]?.toJS());
  for (const [name, raw] of Object.entries(obj(compose.services))) {
    const service = obj(raw);
    if (!String(service.image ?? '').startsWith('edgecv')) continue;
    const where = `${file} service ${name}`;
    const envRaw = service.environment;
    const env = Array.isArray(envRaw)
      ? Object.fromEntries(envRaw.map((e) => String(e).split(/=(.*)/s).slice(0, 2)))
      : Object.fromEntries(Object.entries(obj(envRaw)).map(([k, v]) => [k, interpolated(v)]));
    const args = strings(service.command).map(interpolated);
    const entrypoint = strings(service.entrypoint);
    if (entrypoint.includes('console')) {
      try {
        parseConsoleArgs(args, env);
      } catch (e) {
        problems.push(`${where}: ${(e as Error).message}`);
      }
      for (const p of strings(service.ports))
        if (p.split(':').at(-1) !== String(DEFAULT_CONSOLE_PORT)) problems.push(`${where}: port ${p} is not the console's ${DEFAULT_CONSOLE_PORT}`);
      continue;
    }
    const config = serveConfig(where, args, env, problems);
    if (config?.httpPort !== undefined) httpPorts.add(config.httpPort);
    if (config) drainDelaysMs.push(config.drainDelay ?? 0);
    if (config && config.port !== DEFAULT_PORT) problems.push(`${where}: port ${config.port}, haproxy.cfg and prometheus.yml expect ${DEFAULT_PORT}`);
  }
  return { httpPorts, drainDelaysMs };
}

async function checkKubernetes(file: string, text: string, checks: Checks, problems: string[]): Promise<void> {
  for (const doc of parseAllDocuments(text)) {
    const o = obj(doc.toJS());
    if (o.kind === 'Service') {
      for (const p of list(obj(o.spec).ports).map(obj)) {
        if (p.port !== DEFAULT_PORT && obj(o.metadata).name === 'edgecv')
          problems.push(`${file}: Service port ${String(p.port)} is not ${DEFAULT_PORT}`);
      }
    }
    if (o.kind !== 'Deployment') continue;
    const pod = obj(obj(obj(o.spec).template).spec);
    for (const c of list(pod.containers).map(obj)) {
      if (!String(c.image).startsWith('edgecv')) continue;
      const where = `${file} container ${String(c.name)}`;
      // values from Secrets and the downward API get a stand-in
      const env = Object.fromEntries(
        list(c.env)
          .map(obj)
          .map((e) => [String(e.name), e.value === undefined ? 'stand-in' : String(e.value)]),
      );
      const config = serveConfig(where, strings(c.args), env, problems);
      const ports = list(c.ports).map(obj);
      const port = config?.port ?? DEFAULT_PORT;
      for (const p of ports)
        if (p.containerPort !== port) problems.push(`${where}: containerPort ${String(p.containerPort)}, the server listens on ${port}`);
      const portNames = new Set(ports.map((p) => p.name));
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const get = obj(obj(c[probe]).httpGet);
        if (!get.path) {
          problems.push(`${where}: no ${probe}`);
          continue;
        }
        const problem = await routeProblem(`${where} ${probe}`, String(get.path), checks);
        if (problem) problems.push(problem);
        if (!portNames.has(get.port) && get.port !== port) problems.push(`${where} ${probe}: port ${String(get.port)} is none of the container's`);
        if (get.scheme !== 'HTTPS') problems.push(`${where} ${probe}: the server's port speaks HTTPS`);
      }
      // the drain fits the grace period: preStop's sleep, then SIGTERM and up to --drain-timeout
      const sleep = Number(strings(obj(obj(obj(c.lifecycle).preStop).exec).command).at(-1) ?? 0);
      const drainS = (config?.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS) / 1000;
      const grace = Number(pod.terminationGracePeriodSeconds ?? 30);
      if (config && !(sleep + drainS < grace))
        problems.push(`${where}: preStop ${sleep} s + drain ${drainS} s does not fit terminationGracePeriodSeconds ${grace}`);
      // resources: the figures docs/fleet.md gives, the memory request covering the RSS measured there
      const resources = obj(c.resources);
      for (const [kind, key] of [
        ['requests', 'memory'],
        ['limits', 'memory'],
        ['requests', 'cpu'],
      ] as const) {
        const here = String(obj(resources[kind])[key]);
        const documented = docsFigure(checks.docs, `${kind}.${key}`);
        if (here !== documented) problems.push(`${where}: resources.${kind}.${key} ${here}, docs/fleet.md says ${documented}`);
      }
      const rss = Number(/^(\d+)\s*MiB/.exec(docsFigure(checks.docs, 'measured RSS, peak') ?? '')?.[1]);
      if (!(mebibytes(String(obj(resources.requests).memory)) >= rss)) problems.push(`${where}: memory request below the measured RSS (${rss} MiB)`);
    }
  }
}

async function checkDockerfile(file: string, text: string, checks: Checks, problems: string[]): Promise<void> {
  // join continuation lines, drop comments
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const of = (word: string) => lines.filter((l) => l.split(/\s+/)[0]!.toUpperCase() === word).map((l) => l.slice(word.length).trim());
  const froms = of('FROM');
  if (froms.length < 2) problems.push(`${file}: not multi-stage`);
  for (const f of froms) if (!/bookworm/.test(f)) problems.push(`${file}: FROM ${f} is not Debian bookworm`);
  if (!of('RUN').some((r) => r.includes('node scripts/setup/setup.mjs')))
    problems.push(`${file}: the models are not converted at build time (node scripts/setup/setup.mjs)`);
  const user = of('USER').at(-1);
  if (!user || user === 'root' || user === '0') problems.push(`${file}: runs as root`);
  const env: Record<string, string> = {};
  for (const e of of('ENV')) for (const m of e.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  const entry = of('ENTRYPOINT').at(-1) ?? '';
  if (!/"dist\/src\/cli\.js",\s*"serve"/.test(entry)) problems.push(`${file}: ENTRYPOINT does not run edgecv serve`);
  const config = serveConfig(`${file} ENV`, [], env, problems);
  const port = config?.port ?? DEFAULT_PORT;
  for (const p of of('EXPOSE')) if (Number(p) !== port) problems.push(`${file}: EXPOSE ${p}, the server listens on ${port}`);
  const health = of('HEALTHCHECK').at(-1);
  if (!health) problems.push(`${file}: no HEALTHCHECK`);
  else {
    const route = /path:'([^']+)'/.exec(health)?.[1];
    const hcPort = Number(/port:(\d+)/.exec(health)?.[1]);
    if (!route) problems.push(`${file}: HEALTHCHECK names no path`);
    else {
      const problem = await routeProblem(`${file} HEALTHCHECK`, route, checks);
      if (problem) problems.push(problem);
    }
    if (hcPort !== port) problems.push(`${file}: HEALTHCHECK asks port ${hcPort}, the server listens on ${port}`);
  }
}

async function checkHaproxy(
  file: string,
  text: string,
  checks: Checks,
  problems: string[],
  compose: { httpPorts: Set<number>; drainDelaysMs: number[] },
): Promise<void> {
  const { httpPorts } = compose;
  let mode = '';
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    const words = line.split(/\s+/);
    if (words[0] === 'backend' || words[0] === 'frontend') mode = '';
    if (words[0] === 'mode') mode = words[1]!;
    if (words[0] === 'http-check' && words[1] === 'send') {
      const uri = words[words.indexOf('uri') + 1];
      const problem = uri ? await routeProblem(`${file} health check`, uri, checks) : `${file}: http-check send without uri`;
      if (problem) problems.push(problem);
    }
    // a draining server keeps its listener open until haproxy's checks have seen readiness fail
    const inter = /\binter (\d+)(ms|s)?\b/.exec(line);
    const fall = Number(/\bfall (\d+)/.exec(line)?.[1] ?? 3);
    if (inter && (words[0] === 'default-server' || words[0] === 'server')) {
      const noticeMs = Number(inter[1]) * (inter[2] === 'ms' ? 1 : 1000) * fall;
      const shortest = Math.min(...compose.drainDelaysMs);
      if (!(shortest > noticeMs))
        problems.push(`${file}: ${line}: a server drains ${shortest} ms before closing, haproxy needs ${noticeMs} ms to see it`);
    }
    if (words[0] === 'server') {
      const port = Number(words[2]!.split(':').at(-1));
      // mode tcp passes TLS through to the server's HTTPS port; mode http speaks to its plain --http-port
      if (mode === 'tcp' && port !== DEFAULT_PORT) problems.push(`${file}: ${line}: the servers' HTTPS port is ${DEFAULT_PORT}`);
      if (mode === 'http' && !httpPorts.has(port)) problems.push(`${file}: ${line}: no server is given --http-port ${port}`);
    }
  }
}

function checkPrometheus(file: string, text: string, problems: string[]): void {
  for (const sc of list(obj(parseAllDocuments(text)[0]?.toJS()).scrape_configs).map(obj)) {
    if (sc.job_name !== 'edgecv') continue;
    for (const t of list(sc.static_configs).flatMap((s) => strings(obj(s).targets))) {
      if (Number(t.split(':')[1]) !== DEFAULT_PORT) problems.push(`${file}: target ${t} is not on port ${DEFAULT_PORT}`);
    }
  }
}

/** Everything wrong with the deploy files (empty: all consistent). */
async function deployProblems(files: Map<string, string>, checks: Checks): Promise<string[]> {
  const problems: string[] = [];
  const yamlFiles = [...files.keys()].filter((f) => /\.ya?ml$/.test(f));
  for (const f of yamlFiles) {
    for (const doc of parseAllDocuments(files.get(f)!, { merge: true })) for (const e of doc.errors) problems.push(`${f}: ${e.message}`);
  }
  const compose = await checkCompose('compose.yaml', files.get('compose.yaml') ?? '', checks, problems);
  for (const f of yamlFiles.filter((f) => f.startsWith('kubernetes/'))) await checkKubernetes(f, files.get(f)!, checks, problems);
  await checkDockerfile('Dockerfile', files.get('Dockerfile') ?? '', checks, problems);
  await checkHaproxy('haproxy.cfg', files.get('haproxy.cfg') ?? '', checks, problems, compose);
  checkPrometheus('prometheus.yml', files.get('prometheus.yml') ?? '', problems);
  return problems;
}

let engine: Engine;
let checks: Checks;

beforeAll(async () => {
  engine = await sharedEngine({ workers: 1 });
  const app = createApp({ engine, config: { bodyLimit: DEFAULT_BODY_LIMIT } });
  checks = {
    status: async (p) => (await app.request(p)).status,
    docs: fs.readFileSync(path.join(ROOT, 'docs', 'fleet.md'), 'utf8'),
  };
});

describe('deploy/', () => {
  it('holds the files a fleet starts from', () => {
    expect([...readDeploy().keys()].sort()).toEqual(
      [
        'Dockerfile',
        'compose.yaml',
        'haproxy.cfg',
        'prometheus.yml',
        ...['deployment', 'hpa', 'pdb', 'redis', 'secret.example', 'service'].map((k) => `kubernetes/${k}.yaml`),
      ].sort(),
    );
  });

  it('passes only real options, routes, ports and the measured resource figures', async () => {
    expect(await deployProblems(readDeploy(), checks)).toEqual([]);
  });

  it("haproxy's own check accepts haproxy.cfg (its certificate and the servers' host names made local)", async () => {
    const dir = tempDir('edgecv-deploy-');
    const pem = path.join(dir, 'edgecv.pem');
    const { cert, key } = await generateSelfSigned();
    fs.writeFileSync(pem, `${cert.trim()}\n${key.trim()}\n`);
    const cfg = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(
      cfg,
      readDeploy()
        .get('haproxy.cfg')!
        .replaceAll('/etc/haproxy/certs/edgecv.pem', pem)
        .replace(/\bedgecv\d:(\d+)/g, '127.0.0.1:$1'),
    );
    const check = spawnSync('haproxy', ['-c', '-f', cfg], { encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`).toMatch(/Configuration file is valid/);
    expect(check.status).toBe(0);
  });

  it('fails on a manifest naming a flag that does not exist, or an environment variable', async () => {
    const files = readDeploy();
    files.set(
      'kubernetes/deployment.yaml',
      files.get('kubernetes/deployment.yaml')!.replace('args: ["--workers"', 'args: ["--drain-timout", "20s", "--workers"'),
    );
    files.set('compose.yaml', files.get('compose.yaml')!.replace('EDGECV_REGION: compose', 'EDGECV_REGOIN: compose'));
    expect(await deployProblems(files, checks)).toEqual([
      // the variable is in the three servers' shared block
      ...[1, 2, 3].map((n) => `compose.yaml service edgecv${n}: environment variable EDGECV_REGOIN is no server option`),
      expect.stringMatching(/^kubernetes\/deployment\.yaml container edgecv: Unknown option '--drain-timout'/),
    ]);
  });

  it('fails on a probe path that is no route, a wrong port, resources the docs do not give or a drain haproxy cannot see', async () => {
    const files = readDeploy();
    const k8s = files.get('kubernetes/deployment.yaml')!;
    files.set('kubernetes/deployment.yaml', k8s.replace('path: /health/ready', 'path: /healthz').replace('memory: 800Mi', 'memory: 500Mi'));
    files.set('Dockerfile', files.get('Dockerfile')!.replace('EXPOSE 8008', 'EXPOSE 8080'));
    files.set('haproxy.cfg', files.get('haproxy.cfg')!.replace('server edgecv2 edgecv2:8080', 'server edgecv2 edgecv2:8081'));
    files.set('compose.yaml', files.get('compose.yaml')!.replaceAll('"--drain-delay", "3s"', '"--drain-delay", "2s"'));
    const problems = await deployProblems(files, checks);
    expect(problems).toEqual([
      expect.stringMatching(/readinessProbe: \/healthz is no route of the server \(GET answers 404\)/),
      expect.stringMatching(/resources\.requests\.memory 500Mi, docs\/fleet\.md says 800Mi/),
      expect.stringMatching(/memory request below the measured RSS/),
      expect.stringMatching(/Dockerfile: EXPOSE 8080, the server listens on 8008/),
      // both backends check every 1 s, fall 2
      'haproxy.cfg: default-server check check-ssl verify none inter 1s fall 2 rise 2: a server drains 2000 ms before closing, haproxy needs 2000 ms to see it',
      'haproxy.cfg: default-server check inter 1s fall 2 rise 2: a server drains 2000 ms before closing, haproxy needs 2000 ms to see it',
      expect.stringMatching(/haproxy\.cfg: server edgecv2 edgecv2:8081: no server is given --http-port 8081/),
    ]);
  });
});
