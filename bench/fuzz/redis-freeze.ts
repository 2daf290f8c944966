// `node dist/bench/fuzz/fuzz.js --redis-freeze [--freeze 30] [--enrolments 10]` (or
// `node dist/bench/fuzz/redis-freeze.js ...`): a real redis-server and two real
// `edgecv serve --gallery redis://...` on 127.0.0.1; Redis is stopped (SIGSTOP) for --freeze seconds while
// enrolments go to server a one after another and predictions to server b; then SIGCONT. Prints how long each
// enrolment took and what it answered, whether predictions were served meanwhile, and how long after SIGCONT both
// servers listed exactly what Redis holds again. Writes bench/results/redis-freeze.json.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadJohns } from '../../testkit/face-verification.js';
import { sendRaw } from '../../testkit/fuzz/raw-client.js';
import { startRedis } from '../../testkit/redis-server.js';
import { eventually, REPO_ROOT, startServerProcess, writeResult } from '../../testkit/server-process.js';
import { runAsProgram } from '../entry.js';
import { numericFlags } from './cli-args.js';

const KEY = 'freeze-admin-key-0123456789';

function request(method: string, target: string, headers: Record<string, string>, body: Uint8Array = Buffer.alloc(0)): Buffer {
  const all = { Host: '127.0.0.1', Connection: 'close', 'Content-Length': String(body.length), ...headers };
  return Buffer.concat([
    Buffer.from(
      `${method} ${target} HTTP/1.1\r\n${Object.entries(all)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`,
      'latin1',
    ),
    body,
  ]);
}

/** The probe: `argv` holds its flags. */
export async function redisFreeze(argv: string[]): Promise<number> {
  const flags = numericFlags({ freeze: 30, enrolments: 10 }, argv);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-freeze-'));
  const redis = await startRedis(dir, ['--save', '', '--appendonly', 'yes']);
  const servers = await Promise.all(
    ['a', 'b'].map((n) => startServerProcess(['--data-dir', path.join(dir, n), '--workers', '1', '--admin-key', KEY, '--gallery', redis.url])),
  );
  try {
    const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const call = (server: typeof a, wire: Buffer) => {
      const url = new URL(server.url);
      return sendRaw(url.hostname, Number(url.port), wire, 120_000);
    };
    const photos = loadJohns(path.join(REPO_ROOT, 'test', 'data'));
    const enrol = (i: number) => {
      const p = photos[i % photos.length]!;
      return call(
        a,
        request('POST', `/trainer/add/?subject=${p.subject}`, { 'Content-Type': 'image/jpeg', Authorization: `Bearer ${KEY}` }, p.bytes),
      );
    };
    const subjectsOf = async (server: typeof a) =>
      (
        JSON.parse((await call(server, request('GET', '/trainer/subjects/', {}))).body.toString()) as {
          subjects: { subject: string; samples: number }[];
        }
      ).subjects;
    for (let i = 0; i < 3; i++) if ((await enrol(i * 10)).status !== 200) throw new Error('enrolment before the freeze failed');
    await eventually(async () => (await subjectsOf(b)).length > 0);

    redis.child.kill('SIGSTOP');
    const frozenAt = performance.now();
    const answers: { status: number; ms: number; retryAfter: string | null; error: string }[] = [];
    const predictions: number[] = [];
    for (let i = 0; i < flags.enrolments && performance.now() - frozenAt < flags.freeze * 1000; i++) {
      const r = await enrol(i + 1);
      answers.push({ status: r.status, ms: Math.round(r.ms), retryAfter: r.headers['retry-after'] ?? null, error: r.body.toString().slice(0, 160) });
      predictions.push((await call(b, request('POST', '/recognizer/predict/', { 'Content-Type': 'image/jpeg' }, photos[5]!.bytes))).status);
    }
    const left = flags.freeze * 1000 - (performance.now() - frozenAt);
    if (left > 0) await new Promise((r) => setTimeout(r, left));
    redis.child.kill('SIGCONT');
    const resumedAt = performance.now();
    const want = () => {
      const counts: Record<string, number> = {};
      for (const s of redis.cli('HVALS', 'edgecv:gallery:subjects').split('\n').filter(Boolean)) counts[s] = (counts[s] ?? 0) + 1;
      return JSON.stringify(Object.entries(counts).sort());
    };
    const listed = async (server: typeof a) => JSON.stringify((await subjectsOf(server)).map((s) => [s.subject, s.samples]).sort());
    const agreed = await eventually(async () => (await listed(a)) === want() && (await listed(b)) === want(), 60_000);
    const agreeMs = Math.round(performance.now() - resumedAt);
    const alive = servers.every((s) => s.child.exitCode === null);
    console.table(answers);
    console.log(`predictions on b while frozen: ${JSON.stringify(predictions)}`);
    console.log(`after SIGCONT: both servers list what Redis holds: ${agreed} (${agreeMs} ms); alive: ${alive}`);
    writeResult('redis-freeze', {
      freezeS: flags.freeze,
      answers,
      predictions,
      agreed,
      agreeMs,
      alive,
      when: new Date().toISOString(),
      cpus: os.cpus().length,
    });
    return agreed && alive && answers.every((r) => r.status === 503 && r.ms < 5000) ? 0 : 1;
  } finally {
    redis.child.kill('SIGCONT');
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await runAsProgram(import.meta.url, redisFreeze);
