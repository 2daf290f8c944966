// A real `edgecv serve` process (dist/src/cli.js, compiled by set-up) for the tests that need one (kill -9,
// fleets, hostile HTTP) and for `npm run fuzz` / `npm run soak`.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { packageRoot } from '../src/engine/native.js';

/** The repository root, from the sources or from dist/ when compiled. */
export const REPO_ROOT = packageRoot();

export interface ServerProcess {
  child: ChildProcess;
  /** https://127.0.0.1:<port>/ */
  url: string;
  /** Everything it printed so far. */
  output(): string;
  /** Resolves with the exit code or signal name. */
  exited: Promise<number | string | null>;
  /** Sends `signal` (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
}

/**
 * `wrapper`: a command the server runs under, e.g. ['prlimit', '--nofile=4096:4096']. `cli`: another checkout's
 * dist/src/cli.js (a bench comparing two builds).
 */
export async function startServerProcess(
  args: string[],
  timeoutMs = 120_000,
  wrapper: string[] = [],
  cli = path.join(REPO_ROOT, 'dist/src/cli.js'),
): Promise<ServerProcess> {
  const command = [...wrapper, process.execPath, cli, 'serve', '--port', '0', '--host', '127.0.0.1', ...args];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | string | null>((r) => child.on('exit', (code, signal) => r(code ?? signal)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    child.stdout!.on('data', () => {
      const m = /listening on (https:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before listening:\n${out}`));
    });
  });
  return {
    child,
    url,
    output: () => out,
    exited,
    stop: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `check` every 100 ms until it returns true or `timeoutMs` passes. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** Runs `work` against a fresh server in a temporary data folder, then stops it and removes the folder. */
export async function withTempServer<T>(prefix: string, args: string[], work: (server: ServerProcess) => Promise<T>): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    const server = await startServerProcess(['--data-dir', dataDir, ...args]);
    try {
      return await work(server);
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Writes a bench result as bench/results/<name>.json and says so. */
export function writeResult(name: string, value: unknown): void {
  const out = path.join(REPO_ROOT, 'bench', 'results', `${name}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(value, null, 2)}\n`);
  console.log(`wrote ${path.relative(REPO_ROOT, out)}`);
}
