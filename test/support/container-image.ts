// A server started from the built image the way a container runtime starts it (the image's entry point, user,
// working folder and environment; a host folder as its data volume), with buildah instead of a daemon: these
// machines deny a runtime its namespaces, and `buildah run --isolation chroot` shares the host's network, so the
// server answers on loopback. Used by test/image/ (npm run test:image).

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { httpsRequest } from '../helpers.js';

/** The parts of an image's configuration a container runtime starts it with. */
export interface ImageConfig {
  User: string;
  Entrypoint: string[];
  WorkingDir: string;
  Env: string[];
  Volumes: Record<string, unknown>;
}

export function imageConfig(image: string): ImageConfig {
  const inspect = JSON.parse(execFileSync('buildah', ['inspect', '--type', 'image', image], { encoding: 'utf8', maxBuffer: 1 << 26 })) as {
    Docker: { config: ImageConfig };
  };
  return inspect.Docker.config;
}

/** A working container of the image, removed by `remove()`; `mount()` gives its root file system on this host. */
export class Container {
  readonly id: string;
  constructor(readonly image: string) {
    this.id = execFileSync('buildah', ['from', '--pull=never', '--quiet', image], { encoding: 'utf8' }).trim();
  }
  mount(): string {
    return execFileSync('buildah', ['mount', this.id], { encoding: 'utf8' }).trim();
  }
  remove(): void {
    execFileSync('buildah', ['rm', this.id], { stdio: 'ignore' });
  }
}

export interface ImageServer {
  container: Container;
  url: string;
  /** The server's process on this host (buildah's child): what a runtime's `stop` signals. */
  pid: number;
  /** ms from `buildah run` to the first 200 of /health/ready */
  readyMs: number;
  output(): string;
  /** buildah run's exit status: the server's own. */
  exited: Promise<number | string | null>;
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
}

/**
 * A process's command line as its program sees it: a program of another CPU that binfmt_misc hands to qemu shows
 * qemu's interpreter and the program's path first (the P flag keeps its own argv[0] after them).
 */
function programArgv(argv: string[]): string[] {
  return /qemu|binfmt/.test(path.basename(argv[0] ?? '')) ? argv.slice(2) : argv;
}

/** Processes whose parent chain reaches `root` (at most 5 levels down), with their command lines, by /proc. */
function descendants(root: number): { pid: number; argv: string[] }[] {
  const parents = new Map<number, number>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      parents.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const under = (pid: number) => {
    let at = parents.get(pid) ?? 0;
    for (let depth = 0; depth < 5 && at > 1; depth++, at = parents.get(at) ?? 0) if (at === root) return true;
    return false;
  };
  const argv = (pid: number) => {
    try {
      return programArgv(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean));
    } catch {
      return [];
    }
  };
  return [...parents.keys()].filter(under).map((pid) => ({ pid, argv: argv(pid) }));
}

const insecure = new https.Agent({ rejectUnauthorized: false });

/**
 * Starts the image's entry point with `args` added, on 127.0.0.1:`port`, with `dataDir` as its data volume (made
 * writable for the image's user), and waits until /health/ready answers 200.
 */
export async function startImageServer(opts: {
  image: string;
  dataDir: string;
  port: number;
  uid: number;
  args?: string[];
  timeoutMs?: number;
  /** more bind mounts, as buildah run's -v takes them (host:container[:options]) */
  mounts?: string[];
  /** more environment variables (NAME=value) */
  env?: string[];
}): Promise<ImageServer> {
  const config = imageConfig(opts.image);
  const volume = Object.keys(config.Volumes ?? {})[0];
  if (!volume) throw new Error(`${opts.image} declares no VOLUME`);
  fs.chownSync(opts.dataDir, opts.uid, opts.uid);
  const container = new Container(opts.image);
  const t0 = performance.now();
  const command = [...config.Entrypoint, '--port', String(opts.port), '--host', '127.0.0.1', ...(opts.args ?? [])];
  const child: ChildProcess = spawn(
    'buildah',
    [
      'run',
      '--isolation',
      'chroot',
      '--network',
      'host',
      '-v',
      `${opts.dataDir}:${volume}`,
      ...(opts.mounts ?? []).flatMap((m) => ['-v', m]),
      ...(opts.env ?? []).flatMap((e) => ['-e', e]),
      container.id,
      '--',
      ...command,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | string | null>((r) => child.on('exit', (code, signal) => r(code ?? signal)));
  let done = false;
  void exited.then(() => (done = true));
  const url = `https://127.0.0.1:${opts.port}/`;
  let readyMs = -1;
  let node: { pid: number } | undefined;
  try {
    const deadline = Date.now() + (opts.timeoutMs ?? 180_000);
    while (readyMs < 0) {
      if (done) throw new Error(`the image's server exited before it was ready:\n${out}`);
      if (Date.now() > deadline) throw new Error(`/health/ready gave no 200 within ${opts.timeoutMs ?? 180_000} ms:\n${out}`);
      const res = await httpsRequest(`${url}health/ready`, { agent: insecure }).catch(() => null);
      if (res?.status === 200) readyMs = performance.now() - t0;
      else await new Promise((r) => setTimeout(r, 100));
    }
    // the entry point's own process (Node names its main thread, so match the command line, not the name;
    // buildah-chroot-exec, its parent, carries the same arguments; the exec'd program's argv[0] is its full path)
    const [program, ...entryArgs] = config.Entrypoint;
    node = descendants(child.pid!).find(
      (p) =>
        path.basename(p.argv[0] ?? '') === path.basename(program!) && p.argv.slice(1, config.Entrypoint.length).join(' ') === entryArgs.join(' '),
    );
    if (!node) throw new Error(`no node process under buildah run (pid ${child.pid})`);
  } catch (e) {
    // no server to hand back: leave no process or working container behind
    for (const p of descendants(child.pid!)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await exited;
    container.remove();
    throw e;
  }
  const serverPid = node.pid;
  return {
    container,
    url,
    pid: serverPid,
    readyMs,
    output: () => out,
    exited,
    stop: (signal = 'SIGTERM') => {
      if (!done) process.kill(serverPid, signal);
      return exited;
    },
  };
}

/** The numeric user id of a user name in the image's /etc/passwd. */
export function uidIn(rootfs: string, user: string): number {
  const line = fs
    .readFileSync(path.join(rootfs, 'etc', 'passwd'), 'utf8')
    .split('\n')
    .find((l) => l.split(':')[0] === user);
  if (!line) throw new Error(`no user ${user} in the image's /etc/passwd`);
  return Number(line.split(':')[2]);
}
