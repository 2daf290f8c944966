// Writes exact request bytes on a fresh TLS connection and reads the first final answer (interim 1xx skipped).
// Done when the answer's Content-Length is complete, at close, or at the deadline.

import tls from 'node:tls';

export interface RawAnswer {
  /** 0 when no answer came. */
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** 'answered', 'closed' (no answer before close), 'reset' (socket error first) or 'timeout'. */
  outcome: 'answered' | 'closed' | 'reset' | 'timeout';
  ms: number;
}

function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const lines = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status, headers };
}

export function sendRaw(host: string, port: number, wire: Buffer, timeoutMs: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let buf = Buffer.alloc(0);
    let settled = false;
    let error = false;
    const socket = tls.connect({ host, port, rejectUnauthorized: false });
    const finish = (outcome: RawAnswer['outcome'], answer?: { status: number; headers: Record<string, string>; body: Buffer }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({
        status: answer?.status ?? 0,
        headers: answer?.headers ?? {},
        body: answer?.body ?? Buffer.alloc(0),
        outcome,
        ms: performance.now() - t0,
      });
    };
    /** The first final answer in buf, once complete (or at close when `atClose`). */
    const tryParse = (atClose: boolean) => {
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const { status, headers } = parseHead(buf.subarray(0, end).toString('latin1'));
        if (status >= 100 && status < 200) {
          buf = buf.subarray(end + 4);
          continue;
        }
        const body = buf.subarray(end + 4);
        const length = headers['content-length'];
        if (length === undefined || body.length >= Number(length) || atClose) {
          finish('answered', { status, headers, body: length === undefined ? body : body.subarray(0, Number(length)) });
        }
        return;
      }
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      tryParse(false);
    });
    socket.on('error', () => (error = true));
    socket.on('close', () => {
      tryParse(true);
      finish(error ? 'reset' : 'closed');
    });
    socket.once('secureConnect', () => socket.write(wire));
  });
}
