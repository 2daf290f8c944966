// `npm run fuzz -- --cases 10000 --seed 1 --concurrency 4`: starts a real `edgecv serve` on 127.0.0.1 (temporary
// data folder, self-signed certificate), sends the seeded hostile requests of testkit/fuzz/cases.ts, prints
// statuses and time per class, peak RSS and whether the server survived, and writes bench/results/fuzz.json.
// The same server then gets --ws-cases (default 2000; 0 skips them) seeded hostile WebSocket cases
// (testkit/fuzz/websocket-fuzz.ts; bench/results/fuzz-websocket.json).
// Then (--channel-messages, default 2000; 0 skips it) a Redis fleet server gets seeded malformed messages on its
// gallery change channel (bench/fuzz/channel.ts). Exit code 1 when a server died, answered 5xx (other than 503),
// answered something that is not JSON, or did not recover from the channel messages.
// Then the fleet metrics surfaces (testkit/fuzz/influx-fuzz.ts): --influx-cases (default 2000; 0 skips them)
// hostile console query bodies against a real influxd, and --sink-answers (default 500; 0 skips them) seeded
// faulty InfluxDB answers to a metrics sink (bench/results/fuzz-influx.json). Exit code 1 also when a console
// query got a 5xx or no JSON, a refused batch was sent again, or the sink did not catch up afterwards.
// The load probes run alone instead, one flag each followed by that probe's own flags (ALONE below; each file is
// also its own program, `node dist/bench/fuzz/<file>.js`):
//   --overload [--connections 16] [--requests 2000]: how fast a 1-worker server with a queue of 1 says no
//   --form-flood [--seconds 15] [--clients 4] [--keyed 0|1]: whether a flood of many-part forms stalls other clients
//   --redis-freeze [--freeze 30] [--enrolments 10]: two fleet servers while Redis is stopped, and after

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, withTempServer, writeResult } from '../../testkit/server-process.js';
import { fuzzChangeChannel, type ChannelPhaseReport } from './channel.js';
import { numericFlags } from './cli-args.js';
import { fuzzPhotos, runFuzz } from '../../testkit/fuzz/run-fuzz.js';
import { runWebSocketFuzz } from '../../testkit/fuzz/websocket-fuzz.js';
import { fuzzConsoleQueries, fuzzSinkAnswers } from '../../testkit/fuzz/influx-fuzz.js';
import { startInfluxd } from '../../testkit/influxd.js';
import { formFlood } from './form-flood.js';
import { overload } from './overload.js';
import { redisFreeze } from './redis-freeze.js';

const ADMIN_KEY = 'fuzz-admin-key-0123456789';
// the DeepStack routes are keyed: every case sends them the key, but the deepstack-keys cases
const API_KEY = 'fuzz-api-key-0123456789';
const MB = 1024 * 1024;

async function main(): Promise<number> {
  const flags = numericFlags({
    cases: 10_000,
    seed: 1,
    concurrency: 4,
    workers: 2,
    'channel-messages': 2000,
    'ws-cases': 2000,
    'influx-cases': 2000,
    'sink-answers': 500,
  });
  const httpOk = await withTempServer(
    'edgecv-fuzz-',
    ['--workers', String(flags.workers), '--admin-key', ADMIN_KEY, '--api-key', API_KEY],
    async (server) => {
      const url = new URL(server.url);
      console.log(
        `fuzz: ${flags.cases} cases, seed ${flags.seed}, concurrency ${flags.concurrency}, server pid ${server.child.pid} on ${server.url}`,
      );
      const report = await runFuzz({
        host: url.hostname,
        port: Number(url.port),
        pid: server.child.pid!,
        seed: flags.seed,
        cases: flags.cases,
        concurrency: flags.concurrency,
        photos: fuzzPhotos(path.join(REPO_ROOT, 'test', 'data')),
        adminKey: ADMIN_KEY,
        apiKey: API_KEY,
        onCase: (n) => {
          if (n % 500 === 0) console.log(`  ${n} cases`);
        },
      });
      const alive = report.alive && server.child.exitCode === null;
      console.table(
        Object.fromEntries(
          Object.entries(report.byKind).map(([k, r]) => [
            k,
            {
              cases: r.cases,
              'p50 ms': Math.round(r.p50Ms),
              'max ms': Math.round(r.maxMs),
              statuses: Object.entries(r.statuses)
                .map(([s, n]) => `${s}:${n}`)
                .join(' '),
            },
          ]),
        ),
      );
      console.log(`statuses: ${JSON.stringify(report.statuses)}`);
      console.log(
        `wall ${(report.wallMs / 1000).toFixed(1)} s; server RSS ${(report.startRssBytes / MB).toFixed(0)} MB at start, peak ${(report.peakRssBytes / MB).toFixed(0)} MB; alive: ${alive}`,
      );
      const over = report.slowest.filter((s) => s.ms > 2000).length;
      console.log(`requests over 2 s: ${over}${over === report.slowest.length ? '+' : ''} (timing is only meaningful on a quiet machine)`);
      console.log(
        `slowest: ${report.slowest
          .slice(0, 5)
          .map((s) => `${Math.round(s.ms)} ms ${s.label}`)
          .join('; ')}`,
      );
      for (const e of report.serverErrors) console.log(`5xx: ${e}`);
      for (const e of report.notJson) console.log(`not JSON: ${e}`);
      for (const e of report.unexpected) console.log(`unexpected status: ${e}`);
      for (const e of report.noAnswer.slice(0, 20)) console.log(`no answer: ${e}`);
      writeResult('fuzz', { ...report, alive, when: new Date().toISOString(), cpus: os.cpus().length });
      let webSocketOk = true;
      if (flags['ws-cases'] > 0) {
        console.log(`fuzz: ${flags['ws-cases']} WebSocket cases, seed ${flags.seed}`);
        const ws = await runWebSocketFuzz({
          host: url.hostname,
          port: Number(url.port),
          seed: flags.seed,
          cases: flags['ws-cases'],
          concurrency: flags.concurrency,
          photos: fuzzPhotos(path.join(REPO_ROOT, 'test', 'data')),
        });
        console.table(
          Object.fromEntries(
            Object.entries(ws.byKind).map(([k, r]) => [
              k,
              {
                cases: r.cases,
                outcomes: Object.entries(r.outcomes)
                  .map(([o, n]) => `${o}:${n}`)
                  .join(' '),
              },
            ]),
          ),
        );
        for (const f of ws.failures.slice(0, 20)) console.log(`websocket: ${f}`);
        const wsAlive = server.child.exitCode === null;
        console.log(`websocket: ${ws.failures.length} failures in ${(ws.wallMs / 1000).toFixed(1)} s; alive: ${wsAlive}`);
        writeResult('fuzz-websocket', { ...ws, alive: wsAlive, seed: flags.seed, when: new Date().toISOString() });
        webSocketOk = wsAlive && ws.failures.length === 0;
      }
      return alive && report.serverErrors.length === 0 && report.notJson.length === 0 && report.unexpected.length === 0 && webSocketOk;
    },
  );
  let channel: ChannelPhaseReport | null = null;
  if (flags['channel-messages'] > 0) {
    console.log(`fuzz: ${flags['channel-messages']} malformed messages on the Redis gallery change channel (seed ${flags.seed})`);
    channel = await fuzzChangeChannel({ seed: flags.seed, messages: flags['channel-messages'], adminKey: ADMIN_KEY });
    console.log(
      `channel: ${channel.published} messages in ${(channel.wallMs / 1000).toFixed(1)} s; alive: ${channel.alive}; ready again: ${channel.readyAgain}; ` +
        `still recognizes: ${channel.recognized}; skips logged: ${channel.skippedLogged}`,
    );
    writeResult('fuzz-channel', { ...channel, seed: flags.seed, when: new Date().toISOString() });
  }
  const channelOk = channel === null || (channel.alive && channel.readyAgain && channel.recognized);
  const influxOk = await fuzzFleetMetrics(flags.seed, flags['influx-cases'], flags['sink-answers']);
  return httpOk && channelOk && influxOk ? 0 : 1;
}

/** The console's query fields against a real influxd, and the sink against seeded faulty answers. */
async function fuzzFleetMetrics(seed: number, cases: number, answers: number): Promise<boolean> {
  if (cases === 0 && answers === 0) return true;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edgecv-fuzz-influxd-'));
  const influx = await startInfluxd(dir);
  try {
    let consoleOk = true;
    let consoleReport = null;
    if (cases > 0) {
      await fetch(`${influx.origin}/query`, { method: 'POST', body: new URLSearchParams({ q: 'CREATE DATABASE "fuzz"' }) });
      console.log(`fuzz: ${cases} hostile console metrics queries (seed ${seed}) against influxd`);
      consoleReport = await fuzzConsoleQueries({ influxUrl: `${influx.origin}/fuzz`, seed, cases });
      console.log(`console: statuses ${JSON.stringify(consoleReport.statuses)}; failures ${consoleReport.failures.length}`);
      for (const f of consoleReport.failures.slice(0, 20)) console.log(`console: ${f}`);
      consoleOk = consoleReport.failures.length === 0;
    }
    let sinkOk = true;
    let sinkReport = null;
    if (answers > 0) {
      console.log(`fuzz: ${answers} faulty InfluxDB answers to a metrics sink (seed ${seed})`);
      sinkReport = await fuzzSinkAnswers({ seed, answers, timeoutMs: 120_000 });
      console.log(`sink: ${JSON.stringify(sinkReport)}`);
      sinkOk = sinkReport.resentRefused === 0 && sinkReport.caughtUp;
    }
    writeResult('fuzz-influx', { console: consoleReport, sink: sinkReport, seed, when: new Date().toISOString() });
    return consoleOk && sinkOk;
  } finally {
    await influx.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The probes run alone, one flag each followed by that probe's own flags (their files say what each measures). */
const ALONE: { flag: string; run: (argv: string[]) => Promise<number> }[] = [
  { flag: 'overload', run: overload },
  { flag: 'form-flood', run: formFlood },
  { flag: 'redis-freeze', run: redisFreeze },
];

const args = process.argv.slice(2);
const alone = ALONE.find((a) => args.includes(`--${a.flag}`));
// a probe's keep-alive clients and servers would hold the process open: it ends when the probe is done
if (alone) process.exit(await alone.run(args.filter((a) => a !== `--${alone.flag}`)));
process.exitCode = await main();
