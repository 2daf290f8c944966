// `node dist/bench/fuzz/fuzz.js --form-flood [--seconds 15] [--clients 4] [--keyed 0|1]` (or
// `node dist/bench/fuzz/form-flood.js ...`): does a flood of many-part forms
// stall other clients? A real `edgecv serve` (127.0.0.1, 1 worker) gets, from `clients` TLS
// connections at once, in a loop: the 150,000-part multipart body (18.6 MB of one-byte parts), then, in a second
// phase, the 2.7 M-pair urlencoded body (8.1 MB). Each flood client writes its whole body whatever the server
// answers (the worst case: the server must still read what it refuses), then opens a new connection. Meanwhile
// another client sends GET /test/ every 20 ms on a warm keep-alive connection; its latency p50/p99/max per phase
// (no flood, multipart, urlencoded) is the result, with the flood answers by status. --keyed 1 starts the
// server with --api-key and floods the DeepStack route without a key (refused before reading); --keyed 0 floods
// /detector/detect/. Writes bench/results/form-flood[-keyed].json.

import https from 'node:https';
import tls from 'node:tls';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { withTempServer, writeResult } from '../../testkit/server-process.js';
import { runAsProgram } from '../entry.js';
import { numericFlags } from './cli-args.js';
import { percentile } from '../../src/metrics/percentiles.js';

function chunked(bytes: Buffer, size = 64 * 1024): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

/** 150,000 one-byte parts, 124 bytes each (a 70-character boundary), as the probe sent. */
function manyPartBody(): { type: string; chunks: Buffer[]; length: number } {
  const boundary = `edgecv-many-parts-${'0123456789'.repeat(5)}-x`;
  const body = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="part"\r\n\r\nx\r\n`.repeat(150_000) + `--${boundary}--\r\n`);
  return { type: `multipart/form-data; boundary=${boundary}`, chunks: chunked(body), length: body.length };
}

function manyPairBody(): { type: string; chunks: Buffer[]; length: number } {
  const body = Buffer.from('a=&'.repeat(2_700_000));
  return { type: 'application/x-www-form-urlencoded', chunks: chunked(body), length: body.length };
}

/** One flood request on a fresh connection: the whole body, then the status of the answer ('reset' when none). */
function flood(port: number, route: string, body: { type: string; chunks: Buffer[]; length: number }): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    let text = '';
    let settled = false;
    let written = false;
    const done = (what: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(what);
    };
    const timer = setTimeout(() => done(text.slice(9, 12) || 'timeout'), 30_000);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (/\r\n\r\n/.test(text) && /^HTTP\/1\.1 \d{3}/.test(text)) {
        // the whole body is written before the connection is left (a client that ignores an early answer)
        if (written) done(text.slice(9, 12));
      }
    });
    socket.on('error', () => done(text.slice(9, 12) || 'reset'));
    socket.on('close', () => done(text.slice(9, 12) || 'reset'));
    socket.once('secureConnect', async () => {
      socket.write(`POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${body.type}\r\nContent-Length: ${body.length}\r\n\r\n`);
      for (const c of body.chunks) {
        if (socket.destroyed) return;
        if (!socket.write(c)) await new Promise((r) => socket.once('drain', r));
      }
      written = true;
      if (text !== '') done(text.slice(9, 12));
    });
  });
}

/** The probe: `argv` holds its flags. The flood clients run in a worker thread that loads this file again. */
export async function formFlood(argv: string[]): Promise<number> {
  const flags = numericFlags({ seconds: 15, clients: 4, keyed: 0 }, argv);
  const keyed = flags.keyed === 1;
  const args = ['--workers', '1', ...(keyed ? ['--api-key', 'form-flood-key-0123456789'] : [])];
  const route = keyed ? '/v1/vision/detection' : '/detector/detect/';
  return withTempServer('edgecv-form-flood-', args, async (server) => {
    const url = new URL(server.url);
    const port = Number(url.port);
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
    const probe = () =>
      new Promise<number>((resolve, reject) => {
        const t = performance.now();
        const req = https.request({ host: url.hostname, port, path: '/test/', agent }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t) : reject(new Error(`GET /test/ answered ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end();
      });
    await probe(); // warm: TLS handshake done

    const result: Record<string, unknown> = { route, clients: flags.clients, seconds: flags.seconds, keyed };
    for (const phase of ['idle', 'multipart-150000-parts', 'urlencoded-2.7M-pairs'] as const) {
      const until = performance.now() + flags.seconds * 1000;
      // the flood clients run in a worker thread of their own, so that encrypting their uploads does not delay
      // the probe's own event loop
      const floods =
        phase === 'idle'
          ? Promise.resolve({})
          : new Promise<Record<string, number>>((resolve, reject) => {
              const worker = new Worker(new URL(import.meta.url), {
                workerData: { port, route, phase, clients: flags.clients, ms: flags.seconds * 1000 },
              });
              worker.once('message', resolve);
              worker.once('error', reject);
            });
      const latencies: number[] = [];
      while (performance.now() < until) {
        latencies.push(await probe());
        await new Promise((r) => setTimeout(r, 20));
      }
      const answers = await floods;
      latencies.sort((a, b) => a - b);
      const row = {
        probes: latencies.length,
        p50Ms: +percentile(latencies, 50).toFixed(1),
        p99Ms: +percentile(latencies, 99).toFixed(1),
        maxMs: +latencies.at(-1)!.toFixed(1),
        floodAnswers: answers,
      };
      result[phase] = row;
      console.log(
        `${phase}: GET /test/ p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, max ${row.maxMs} ms (${row.probes} probes); flood answers ${JSON.stringify(answers)}`,
      );
    }
    writeResult(keyed ? 'form-flood-keyed' : 'form-flood', result);
    return 0;
  });
}

/** The worker thread: `clients` flood loops for `ms`, then the answers by status to the main thread. */
async function floodWorker(job: { port: number; route: string; phase: string; clients: number; ms: number }): Promise<void> {
  const body = job.phase.startsWith('multipart') ? manyPartBody() : manyPairBody();
  const until = performance.now() + job.ms;
  const answers: Record<string, number> = {};
  await Promise.all(
    Array.from({ length: job.clients }, async () => {
      while (performance.now() < until) {
        const status = await flood(job.port, job.route, body);
        answers[status] = (answers[status] ?? 0) + 1;
      }
    }),
  );
  parentPort!.postMessage(answers);
}

if (isMainThread) await runAsProgram(import.meta.url, formFlood, { exit: true });
else void floodWorker(workerData as { port: number; route: string; phase: string; clients: number; ms: number });
