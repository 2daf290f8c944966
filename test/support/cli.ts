// The edgecv CLI as the metrics tests drive it (a real `node dist/src/cli.js` process), a bounded wait, and the
// metrics answer's JSON shape as a client reads it.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from '../helpers.js';

export const CLI = path.join(ROOT, 'dist/src/cli.js');

export type Row = (string | number)[];
export interface SeriesJson {
  name: string;
  columns: string[];
  values: Row[];
}
export interface AnswerJson {
  data: { Series: SeriesJson[] }[];
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the edgecv CLI to completion (bounded by timeoutMs), with `stdin` written to it when given. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  stdin?: string,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...env },
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`edgecv ${args.join(' ')} did not finish within ${timeoutMs / 1000} s\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Waits (bounded) until `check` returns a value, polling every `everyMs`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
