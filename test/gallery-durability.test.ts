// Durability with a real kill: a server process enrols in a loop, gets SIGKILL mid-way, restarts on the same data
// folder. Every enrolment acknowledged before the kill must be there, and the SQLite file must be sound.

import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { Database } from '../src/sqlite.js';
import { afterAll, describe, expect, it } from 'vitest';
import { loadJohns } from '../testkit/face-verification.js';
import { DATA_DIR, httpsRequest } from './helpers.js';
import { startServerProcess, type ServerProcess } from '../testkit/server-process.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-kill-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('gallery durability', () => {
  it('keeps every acknowledged enrolment, and a sound file, across kill -9 during enrolment', async () => {
    const photos = loadJohns(DATA_DIR);
    const agent = new https.Agent({ rejectUnauthorized: false, keepAlive: true, maxSockets: 4 });
    const first = await startServerProcess(['--data-dir', dataDir, '--workers', '2', '--no-warm-up']);
    servers.push(first);

    const acknowledged = new Map<number, string>();
    let sent = 0;
    let killed = false;
    const enrolLoop = async (lane: number) => {
      for (let i = lane; !killed; i += 2) {
        const p = photos[i % photos.length]!;
        sent++;
        try {
          const res = await httpsRequest(`${first.url}trainer/add/?subject=${p.subject}`, {
            method: 'POST',
            headers: { 'content-type': 'image/jpeg' },
            body: p.bytes,
            agent,
          });
          if (res.status === 200) {
            const body = JSON.parse(res.text) as { id: number; subject: string };
            acknowledged.set(body.id, body.subject);
          } else if (!killed) {
            throw new Error(`enrolment failed: ${res.status} ${res.text}`);
          }
        } catch (e) {
          if (!killed) throw e; // a connection reset after the kill is expected
          return;
        }
        if (acknowledged.size >= 12 && !killed) {
          // Kill while the other lane's request is still being served.
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all([enrolLoop(0), enrolLoop(1)]);
    expect(await first.exited).toBe('SIGKILL');
    agent.destroy();
    expect(acknowledged.size).toBeGreaterThanOrEqual(12);
    expect(sent).toBeGreaterThan(acknowledged.size); // at least one request was in flight when it died

    // The file opens and is sound before the server touches it again.
    const db = new Database(path.join(dataDir, 'gallery.db'));
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const rows = db.prepare('SELECT id, subject FROM samples').all() as { id: number; subject: string }[];
    db.close();
    for (const [id, subject] of acknowledged) expect(rows).toContainEqual({ id, subject });
    expect(rows.length).toBeLessThanOrEqual(acknowledged.size + 1); // at most the request in flight besides

    const second = await startServerProcess(['--data-dir', dataDir, '--workers', '1', '--no-warm-up']);
    servers.push(second);
    const list = await httpsRequest(`${second.url}trainer/subjects/`, { agent: new https.Agent({ rejectUnauthorized: false }) });
    expect(list.status).toBe(200);
    const ids = (JSON.parse(list.text) as { subjects: { ids: number[] }[] }).subjects.flatMap((s) => s.ids);
    for (const id of acknowledged.keys()) expect(ids).toContain(id);
    const predict = await httpsRequest(`${second.url}recognizer/predict/`, {
      method: 'POST',
      headers: { 'content-type': 'image/jpeg' },
      body: photos[0]!.bytes,
      agent: new https.Agent({ rejectUnauthorized: false }),
    });
    expect(predict.status).toBe(200);
    expect(JSON.parse(predict.text)).toMatchObject({ success: 'true', subject: photos[0]!.subject });
    expect(await second.stop()).toBe(0);
  });
});
