// WebSocket traffic for `npm run soak` (bench/fuzz/soak.ts), beside its REST load: `clients` sockets that send
// photos to the /ws/* routes one frame at a time and reconnect every `framesPerSocket` frames (sockets come and
// go all the time), and `idleClients` sockets that send nothing until the server closes them for idleness
// (--ws-idle-timeout), then reconnect. Counts frames, answers by status, and anything that went wrong.

import WebSocket from 'ws';

export interface WebSocketLoadReport {
  frames: number;
  /** Answers by status (200 for a success). */
  statuses: Record<string, number>;
  socketsOpened: number;
  /** Idle sockets the server closed with 1001. */
  idleClosed: number;
  /** A refused handshake, a socket error, an unexpected close, an answer that is not JSON or a 5xx other than 503. */
  errors: number;
  errorSamples: string[];
}

const ROUTES = ['/ws/detector/detect', '/ws/object/detect', '/ws/pose/detect', '/ws/recognizer/predict'];

export async function webSocketLoad(opts: {
  /** https://host:port/ */
  url: string;
  /** photo for each route, the recognizer's an enrolled face */
  photos: { general: Buffer; face: Buffer };
  clients: number;
  idleClients: number;
  durationMs: number;
  framesPerSocket?: number;
}): Promise<WebSocketLoadReport> {
  const base = opts.url.replace(/^https:/, 'wss:').replace(/\/$/, '');
  const until = Date.now() + opts.durationMs;
  const report: WebSocketLoadReport = { frames: 0, statuses: {}, socketsOpened: 0, idleClosed: 0, errors: 0, errorSamples: [] };
  const fail = (what: string) => {
    report.errors++;
    if (report.errorSamples.length < 20) report.errorSamples.push(`${new Date().toISOString()} ${what}`);
  };

  const open = (path: string) =>
    new Promise<WebSocket | null>((resolve) => {
      const ws = new WebSocket(`${base}${path}`, { rejectUnauthorized: false });
      ws.once('open', () => {
        report.socketsOpened++;
        resolve(ws);
      });
      ws.once('unexpected-response', (_req, res) => {
        fail(`${path}: upgrade refused with ${res.statusCode}`);
        res.resume();
        resolve(null);
      });
      ws.once('error', (e) => {
        fail(`${path}: ${e.message}`);
        resolve(null);
      });
    });

  /** The answer to one frame, or null (counted as an error) when the socket closed or 60 s passed. */
  const ask = (ws: WebSocket, frame: Buffer) =>
    new Promise<string | null>((resolve) => {
      const done = (answer: string | null, why?: string) => {
        clearTimeout(timer);
        ws.off('message', onMessage);
        ws.off('close', onClose);
        if (why) fail(why);
        resolve(answer);
      };
      const onMessage = (data: WebSocket.RawData) => done(data.toString());
      const onClose = (code: number) => done(null, `closed ${code} while a frame was answered`);
      const timer = setTimeout(() => done(null, 'no answer within 60 s'), 60_000);
      ws.on('message', onMessage);
      ws.once('close', onClose);
      ws.send(frame);
    });

  const busy = async (i: number) => {
    let n = i;
    while (Date.now() < until) {
      const path = ROUTES[n++ % ROUTES.length]!;
      const ws = await open(path);
      if (!ws) {
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      ws.on('error', () => {});
      const photo = path.includes('recognizer') ? opts.photos.face : opts.photos.general;
      for (let k = 0; k < (opts.framesPerSocket ?? 25) && Date.now() < until && ws.readyState === WebSocket.OPEN; k++) {
        const answer = await ask(ws, photo);
        if (answer === null) break;
        report.frames++;
        let status: number;
        try {
          status = (JSON.parse(answer) as { status?: number }).status ?? 200;
        } catch {
          fail(`${path}: answer not JSON: ${answer.slice(0, 100)}`);
          continue;
        }
        report.statuses[status] = (report.statuses[status] ?? 0) + 1;
        if (status >= 500 && status !== 503) fail(`${path}: ${answer.slice(0, 200)}`);
      }
      ws.close();
      await new Promise((r) => (ws.readyState === WebSocket.CLOSED ? r(null) : ws.once('close', r)));
    }
  };

  const idle = async () => {
    while (Date.now() < until) {
      const ws = await open(ROUTES[0]!);
      if (!ws) {
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      ws.on('error', () => {});
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), Math.max(0, until - Date.now()));
        ws.once('close', (c: number) => {
          clearTimeout(timer);
          resolve(c);
        });
      });
      if (code === null)
        ws.terminate(); // the soak ended first
      else if (code === 1001) report.idleClosed++;
      else fail(`idle socket closed with ${code}`);
    }
  };

  await Promise.all([...Array.from({ length: opts.clients }, (_, i) => busy(i)), ...Array.from({ length: opts.idleClients }, idle)]);
  return report;
}
