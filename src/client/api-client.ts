// A small HTTPS JSON client for the edgecv API, whose failures are ClientError with a message that tells
// the user what happened and what to do: unreachable server, untrusted certificate, 401, 403, ...

import fs from 'node:fs';
import https from 'node:https';

export class ClientError extends Error {
  override name = 'ClientError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface TlsChoice {
  /** PEM file of the certificate (or its CA) to trust, e.g. the server's <data-dir>/tls/cert.pem. */
  cacert?: string;
  /** Skip certificate verification altogether. */
  insecure?: boolean;
}

/** 'https://host:8008/' or 'https://host:8008' -> 'https://host:8008'; only https is accepted. */
export function normalizeAddr(addr: string): string {
  let url: URL;
  try {
    url = new URL(addr);
  } catch {
    throw new ClientError(`--addr ${JSON.stringify(addr)} is not a URL: give e.g. https://host:8008`);
  }
  if (url.protocol !== 'https:') throw new ClientError(`--addr must be an https:// address (edgecv serves HTTPS only), not ${url.protocol}//`);
  return url.origin;
}

const CERT_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'EPIPE']);

export function describeNetworkError(addr: string, e: NodeJS.ErrnoException): ClientError {
  const code = e.code ?? '';
  if (CERT_ERRORS.has(code)) {
    return new ClientError(
      `the certificate of ${addr} is not trusted (${e.message}). If this is your server's self-signed certificate, ` +
        `trust it with --cacert FILE (the server's <data-dir>/tls/cert.pem), or skip verification with --insecure`,
    );
  }
  if (UNREACHABLE.has(code)) return new ClientError(`cannot reach ${addr} (${code}): is the server running, and is the address right?`);
  return new ClientError(`request to ${addr} failed: ${e.message}`);
}

export function tlsOptions(tls: TlsChoice): { ca?: string; rejectUnauthorized: boolean } {
  if (tls.insecure) return { rejectUnauthorized: false };
  if (tls.cacert === undefined) return { rejectUnauthorized: true };
  try {
    return { ca: fs.readFileSync(tls.cacert, 'utf8'), rejectUnauthorized: true };
  } catch (e) {
    throw new ClientError(`cannot read --cacert ${tls.cacert}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

export interface ApiRequest {
  addr: string;
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** A body sent as is instead of JSON (e.g. JSON lines), with its media type. */
  raw?: { contentType: string; text: string };
  token?: string;
  tls: TlsChoice;
  timeoutMs?: number;
}

/** Sends the request; resolves with the parsed JSON of a 2xx answer, throws ClientError otherwise. */
export function apiRequest(req: ApiRequest): Promise<unknown> {
  const tls = tlsOptions(req.tls);
  const payload = req.raw ? req.raw.text : req.body === undefined ? undefined : JSON.stringify(req.body);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (payload !== undefined) headers['Content-Type'] = req.raw ? req.raw.contentType : 'application/json';
  if (req.token !== undefined) headers['Authorization'] = `Bearer ${req.token}`;
  return new Promise((resolve, reject) => {
    const r = https.request(
      new URL(req.path, req.addr),
      { method: req.method, headers, ...tls, agent: false, timeout: req.timeoutMs ?? 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', (e) => reject(describeNetworkError(req.addr, e)));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          if (status >= 200 && status < 300 && json !== undefined) return resolve(json);
          const serverSays = (json as { error?: unknown } | undefined)?.error;
          const detail = typeof serverSays === 'string' ? serverSays : text.slice(0, 200) || res.statusMessage || '';
          reject(new ClientError(`${req.addr} answered ${status}: ${detail}`, status));
        });
      },
    );
    r.on('timeout', () => r.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    r.on('error', (e: NodeJS.ErrnoException) => reject(describeNetworkError(req.addr, e)));
    r.end(payload);
  });
}
