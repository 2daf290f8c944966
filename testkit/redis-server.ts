// A real redis-server (Debian's package, installed by `node scripts/setup/setup.mjs --test`) on 127.0.0.1 for the fleet
// tests and `npm run fuzz`: started on a free port in its own folder, with redis-cli beside it.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from './server-process.js';

export interface RedisServer {
  child: ChildProcess;
  port: number;
  /** redis://127.0.0.1:<port>/0 */
  url: string;
  /** redis-cli with these arguments; its output, trimmed. Throws when it fails. */
  cli(...args: string[]): string;
  /** SIGKILL, and waits for the exit. */
  stop(): Promise<void>;
}

/** Starts redis-server with `args` (e.g. ['--save', '', '--appendonly', 'no']) in `dir`. */
export async function startRedis(dir: string, args: string[] = []): Promise<RedisServer> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited ${code} (is it installed? node scripts/setup/setup.mjs --test):\n${out}`));
    });
  });
  const cli = (...cliArgs: string[]): string => {
    const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...cliArgs], { encoding: 'utf8', timeout: 10_000 });
    if (r.status !== 0) throw new Error(`redis-cli ${cliArgs.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  return {
    child,
    port,
    url: `redis://127.0.0.1:${port}/0`,
    cli,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT'); // a test may have stopped it
        child.kill('SIGKILL');
      }
      await exited;
    },
  };
}
