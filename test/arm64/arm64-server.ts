// The server's linux/arm64 build (scripts/test-arm64.mjs assembles it) started under qemu-user on this x64 host,
// on loopback, and waited for until /health/ready answers 200. Emulated: for checks of answers, never of speed.

import { spawn } from 'node:child_process';
import https from 'node:https';
import path from 'node:path';
import { httpsRequest } from '../helpers.js';

/** What scripts/test-arm64.mjs hands over in EDGECV_ARM64_SERVER. */
export interface Arm64Build {
  /** qemu-aarch64-static, its -L sysroot and the arm64 node binary */
  command: string[];
  /** the server's files (package.json, dist/src, build/Release/edgecv.node, node_modules, models) */
  app: string;
}

export interface Arm64Server {
  url: string;
  pid: number;
  /** ms from the start to the first 200 of /health/ready (emulated) */
  readyMs: number;
  output(): string;
  exited: Promise<number | string | null>;
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
}

export function arm64Build(): Arm64Build {
  const raw = process.env['EDGECV_ARM64_SERVER'];
  if (!raw) throw new Error('EDGECV_ARM64_SERVER is not set: run `npm run test:arm64` (scripts/test-arm64.mjs), which builds the arm64 server');
  return JSON.parse(raw) as Arm64Build;
}

const insecure = new https.Agent({ rejectUnauthorized: false });
/** Each worker loads and warms up every model at start, which emulation makes slow; answers do not depend on it. */
const ONE_WORKER = ['--workers', '1'];

export async function startArm64Server(build: Arm64Build, opts: { dataDir: string; port: number; timeoutMs: number }): Promise<Arm64Server> {
  const [program, ...args] = build.command;
  const cli = path.join(build.app, 'dist', 'src', 'cli.js');
  const child = spawn(program!, [...args, cli, 'serve', '--port', String(opts.port), '--host', '127.0.0.1', '--data-dir', opts.dataDir, ...ONE_WORKER], {
    cwd: build.app,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | string | null>((r) => child.on('exit', (code, signal) => r(code ?? signal)));
  let done = false;
  void exited.then(() => (done = true));
  const url = `https://127.0.0.1:${opts.port}/`;
  const t0 = performance.now();
  const deadline = Date.now() + opts.timeoutMs;
  let readyMs = -1;
  while (readyMs < 0) {
    if (done) throw new Error(`the arm64 server exited before it was ready:\n${out}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(`/health/ready gave no 200 within ${opts.timeoutMs} ms:\n${out}`);
    }
    const res = await httpsRequest(`${url}health/ready`, { agent: insecure }).catch(() => null);
    if (res?.status === 200) readyMs = performance.now() - t0;
    else await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    pid: child.pid!,
    readyMs,
    output: () => out,
    exited,
    stop: (signal = 'SIGTERM') => {
      if (!done) child.kill(signal);
      return exited;
    },
  };
}
