// The Redis part of `npm run fuzz` (bench/fuzz/fuzz.ts, --channel-messages N, 0 skips it): a real redis-server and
// a real `edgecv serve --gallery redis://...` on 127.0.0.1; one subject enrolled, then N seeded malformed messages
// published on the gallery's change channel (testkit/fuzz/redis-channel.ts). The server must survive, be
// 'ready' again (it resyncs from Redis after a bad message) and still recognize the subject.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadJohns } from '../../testkit/face-verification.js';
import { sendRaw } from '../../testkit/fuzz/raw-client.js';
import type { ChannelEmbedder } from '../../testkit/fuzz/redis-channel.js';
import { runChannelFuzz, type ChannelFuzzReport } from '../../testkit/fuzz/run-channel-fuzz.js';
import { startRedis } from '../../testkit/redis-server.js';
import { eventually, REPO_ROOT, withTempServer } from '../../testkit/server-process.js';

export interface ChannelPhaseReport extends ChannelFuzzReport {
  alive: boolean;
  /** The server was 'ready' again within 60 s of the last message. */
  readyAgain: boolean;
  /** It still recognized the enrolled subject. */
  recognized: boolean;
  /** Its log lines about skipped messages. */
  skippedLogged: boolean;
}

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

export async function fuzzChangeChannel(opts: { seed: number; messages: number; adminKey: string }): Promise<ChannelPhaseReport> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-fuzz-redis-'));
  const redis = await startRedis(dir, ['--save', '', '--appendonly', 'no']);
  try {
    return await withTempServer('edgecv-fuzz-fleet-', ['--workers', '1', '--admin-key', opts.adminKey, '--gallery', redis.url], async (server) => {
      const url = new URL(server.url);
      const call = (wire: Buffer) => sendRaw(url.hostname, Number(url.port), wire, 30_000);
      const photos = loadJohns(path.join(REPO_ROOT, 'test', 'data'));
      const subject = photos[0]!.subject;
      const enrolled = await call(
        request(
          'POST',
          `/trainer/add/?subject=${subject}`,
          { 'Content-Type': 'image/jpeg', Authorization: `Bearer ${opts.adminKey}` },
          photos[0]!.bytes,
        ),
      );
      if (enrolled.status !== 200) throw new Error(`enrolment failed: ${enrolled.status} ${enrolled.body.toString()}`);
      const gallery = async () =>
        (
          JSON.parse((await call(request('GET', '/server/capabilities/', {}))).body.toString()) as {
            gallery: { state: string; embedder: ChannelEmbedder };
          }
        ).gallery;
      const report = await runChannelFuzz({ redisUrl: redis.url, seed: opts.seed, messages: opts.messages, embedder: (await gallery()).embedder });
      const alive = () => server.child.exitCode === null && server.child.signalCode === null;
      const readyAgain = alive() && (await eventually(async () => alive() && (await gallery()).state === 'ready', 60_000));
      let recognized = false;
      if (alive()) {
        const probe = photos.find((p) => p.subject === subject && p !== photos[0])!;
        const answer = await call(request('POST', '/recognizer/predict/', { 'Content-Type': 'image/jpeg' }, probe.bytes));
        recognized = answer.status === 200 && (JSON.parse(answer.body.toString()) as { subject?: string }).subject === subject;
      }
      return { ...report, alive: alive(), readyAgain, recognized, skippedLogged: /malformed change message skipped/.test(server.output()) };
    });
  } finally {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
