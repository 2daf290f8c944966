// A WebSocket client at the byte level (RFC 6455), for what a well-behaved library will not send: a frame trickled
// a byte at a time, unmasked or reserved-bit frames, lies about lengths, pings left unanswered. It speaks TLS
// (the server's certificate is not checked: loopback only) and reads what the server sends back.

import crypto from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';

export interface RawUpgrade {
  socket: net.Socket;
  /** Status of the server's answer to the upgrade request (101 when upgraded). */
  status: number;
  /** Its body, when it was refused. */
  body: string;
  /** Every frame the server sent after the 101, in order. */
  frames: ServerFrame[];
  /** Resolves when the connection is closed, with the server's close frame (code, reason) if one came. */
  closed: Promise<{ code: number | null; reason: string }>;
}

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

export const OPCODE = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** One client frame (masked unless told not to). */
export function clientFrame(
  opcode: number,
  payload: Buffer | string,
  opts: { fin?: boolean; mask?: boolean; rsv?: number; claimedLength?: number } = {},
): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const fin = opts.fin ?? true;
  const mask = opts.mask ?? true;
  const length = opts.claimedLength ?? data.length;
  const first = (fin ? 0x80 : 0) | ((opts.rsv ?? 0) << 4) | (opcode & 0x0f);
  let header: Buffer;
  if (length < 126) header = Buffer.from([first, (mask ? 0x80 : 0) | length]);
  else if (length < 65536) {
    header = Buffer.alloc(4);
    header[0] = first;
    header[1] = (mask ? 0x80 : 0) | 126;
    header.writeUInt16BE(length, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = first;
    header[1] = (mask ? 0x80 : 0) | 127;
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  if (!mask) return Buffer.concat([header, data]);
  const key = crypto.randomBytes(4);
  const masked = Buffer.from(data);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!;
  return Buffer.concat([header, key, masked]);
}

/** Splits server frames off the front of `buf` (server frames are never masked). */
function parseFrames(buf: Buffer): { frames: ServerFrame[]; rest: Buffer } {
  const frames: ServerFrame[] = [];
  let at = 0;
  for (;;) {
    if (buf.length - at < 2) break;
    const opcode = buf[at]! & 0x0f;
    let length = buf[at + 1]! & 0x7f;
    let head = 2;
    if (length === 126) {
      if (buf.length - at < 4) break;
      length = buf.readUInt16BE(at + 2);
      head = 4;
    } else if (length === 127) {
      if (buf.length - at < 10) break;
      length = Number(buf.readBigUInt64BE(at + 2));
      head = 10;
    }
    if (buf.length - at < head + length) break;
    frames.push({ opcode, payload: buf.subarray(at + head, at + head + length) });
    at += head + length;
  }
  return { frames, rest: buf.subarray(at) };
}

/**
 * Opens a connection and sends an upgrade request for `path` (extra or replaced headers in `headers`; a header
 * set to null is left out). Resolves once the server has answered the upgrade request.
 */
export function rawUpgrade(opts: {
  host: string;
  port: number;
  path: string;
  headers?: Record<string, string | null>;
  tls?: boolean;
  timeoutMs?: number;
  /** GET unless told; a body goes right after the headers. */
  method?: string;
  body?: Buffer;
}): Promise<RawUpgrade> {
  const headers: Record<string, string | null> = {
    Host: `${opts.host}:${opts.port}`,
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'),
    'Sec-WebSocket-Version': '13',
    ...opts.headers,
  };
  const request =
    `${opts.method ?? 'GET'} ${opts.path} HTTP/1.1\r\n` +
    Object.entries(headers)
      .filter((e): e is [string, string] => e[1] !== null)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    '\r\n';
  return new Promise((resolve, reject) => {
    const socket: net.Socket =
      opts.tls === false
        ? net.connect(opts.port, opts.host)
        : tls.connect({ host: opts.host, port: opts.port, rejectUnauthorized: false, servername: undefined });
    socket.on('error', () => {}); // resets show as the 'close' below
    socket.once(opts.tls === false ? 'connect' : 'secureConnect', () =>
      socket.write(Buffer.concat([Buffer.from(request, 'latin1'), opts.body ?? Buffer.alloc(0)])),
    );
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to the upgrade request of ${opts.path}`));
    }, opts.timeoutMs ?? 10_000);
    let buf: Buffer = Buffer.alloc(0);
    let upgraded: RawUpgrade | null = null;
    let closeFrame: { code: number | null; reason: string } | null = null;
    let resolveClosed!: (v: { code: number | null; reason: string }) => void;
    const closed = new Promise<{ code: number | null; reason: string }>((r) => (resolveClosed = r));
    socket.on('close', () => {
      clearTimeout(timer);
      resolveClosed(closeFrame ?? { code: null, reason: '' });
      if (!upgraded) reject(new Error(`connection closed before an answer to the upgrade request of ${opts.path}`));
    });
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (status !== 101 && buf.length < end + 4 + length) return;
        clearTimeout(timer);
        const body = status === 101 ? '' : buf.subarray(end + 4, end + 4 + length).toString();
        buf = buf.subarray(status === 101 ? end + 4 : buf.length);
        upgraded = { socket, status, body, frames: [], closed };
        resolve(upgraded);
      }
      const { frames, rest } = parseFrames(buf);
      buf = rest;
      for (const f of frames) {
        upgraded.frames.push(f);
        if (f.opcode === OPCODE.close) {
          closeFrame = { code: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : null, reason: f.payload.subarray(2).toString() };
        }
      }
    });
  });
}
