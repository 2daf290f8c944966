// A small InfluxDB 1.x HTTP client for the metrics sink and the console: /write (gzip line protocol),
// /query (InfluxQL, answers parsed), /ping. One URL form everywhere:
//   http(s)://[user:password@]host:8086/<database>
// Credentials come from the URL or a file (never from logs: `redacted` is the form to print), TLS can
// trust an own CA file. InfluxDB 2.x/3.x speak the same /write and /query in their v1 compatibility API
// (a token instead of user/password); that path is untested here.

import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';

export class InfluxError extends Error {
  override name = 'InfluxError';
  constructor(
    message: string,
    /** HTTP status, or 0 when no answer came (refused, reset, timeout). */
    readonly status: number,
    /** False when the request surely never reached InfluxDB (connection refused): nothing was written. */
    readonly maybeDelivered: boolean,
  ) {
    super(message);
  }
}

export type InfluxAuth = { username: string; password: string } | { token: string };

export interface InfluxTarget {
  /** scheme://host:port, without credentials or path. */
  origin: string;
  database: string;
  auth?: InfluxAuth;
  /** PEM CA certificate(s) to trust for https. */
  ca?: string;
  /** The URL with any password or token replaced by ***: the only form that may be printed. */
  redacted: string;
}

export class InfluxUrlError extends Error {
  override name = 'InfluxUrlError';
}

/**
 * Reads a credentials file: its first line is `USER:PASSWORD` (InfluxDB 1.x) or `token TOKEN` (a v1-compat
 * token of InfluxDB 2.x/3.x).
 */
export function readCredentialsFile(file: string): InfluxAuth {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new InfluxUrlError(`cannot read the InfluxDB credentials file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const line = (text.split(/\r?\n/, 1)[0] ?? '').trim();
  const token = /^token\s+(\S+)$/i.exec(line);
  if (token) return { token: token[1]! };
  const colon = line.indexOf(':');
  if (colon <= 0) throw new InfluxUrlError(`${file}: the first line must be USER:PASSWORD or 'token TOKEN'`);
  return { username: line.slice(0, colon), password: line.slice(colon + 1) };
}

/** Parses `http(s)://[user:pass@]host:port/database`; credentials/CA files override or add to it. */
export function parseInfluxUrl(raw: string, files: { credentials?: string; ca?: string } = {}): InfluxTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InfluxUrlError(`not a URL: expected http(s)://host:8086/database`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InfluxUrlError(`InfluxDB URL must be http:// or https:// (got ${url.protocol})`);
  if (url.search !== '' || url.hash !== '') throw new InfluxUrlError('InfluxDB URL takes no ?query or #fragment: http(s)://host:8086/database');
  const segments = url.pathname.split('/').filter((s) => s !== '');
  if (segments.length !== 1) throw new InfluxUrlError('InfluxDB URL must name the database as its path: http(s)://host:8086/database');
  const database = decodeURIComponent(segments[0]!);
  let auth: InfluxAuth | undefined;
  if (url.username !== '') auth = { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
  if (files.credentials !== undefined) auth = readCredentialsFile(files.credentials);
  let ca: string | undefined;
  if (files.ca !== undefined) {
    try {
      ca = fs.readFileSync(files.ca, 'utf8');
    } catch (e) {
      throw new InfluxUrlError(`cannot read the InfluxDB CA file ${files.ca}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  const userinfo = url.username !== '' ? `${url.username}:***@` : '';
  return { origin: url.origin, database, auth, ca, redacted: `${url.protocol}//${userinfo}${url.host}/${segments[0]}` };
}

/** One statement's answer in InfluxDB's JSON. */
export interface InfluxSeries {
  name: string;
  tags?: Record<string, string>;
  columns: string[];
  values: (string | number | boolean | null)[][];
}

export interface InfluxStatementResult {
  statement_id: number;
  series?: InfluxSeries[];
  error?: string;
  partial?: boolean;
}

export interface InfluxClientOptions {
  /** ms a request may take in all (default 10 s). */
  timeoutMs?: number;
  /** Connections kept to InfluxDB at most (default 4). */
  maxSockets?: number;
}

/** Quotes an identifier for InfluxQL: "name". */
export function quoteIdent(name: string): string {
  return `"${name.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Quotes a string literal for InfluxQL: 'value'. */
export function quoteString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

export class InfluxClient {
  readonly target: InfluxTarget;
  readonly #agent: http.Agent;
  readonly #timeoutMs: number;

  constructor(target: InfluxTarget, opts: InfluxClientOptions = {}) {
    this.target = target;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 4 };
    this.#agent = target.origin.startsWith('https:') ? new https.Agent({ ...agentOpts, ca: target.ca }) : new http.Agent(agentOpts);
  }

  #headers(): Record<string, string> {
    const auth = this.target.auth;
    if (!auth) return {};
    if ('token' in auth) return { Authorization: `Token ${auth.token}` };
    return { Authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
  }

  #request(
    method: string,
    path: string,
    body: Buffer | undefined,
    headers: Record<string, string>,
    onData?: (chunk: Buffer) => void,
  ): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const mod = this.target.origin.startsWith('https:') ? https : http;
      const req = mod.request(
        `${this.target.origin}${path}`,
        { method, agent: this.#agent, headers: { ...this.#headers(), ...headers, ...(body ? { 'Content-Length': String(body.length) } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => {
            if (onData && res.statusCode === 200) onData(d);
            else chunks.push(d);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', (e) => reject(new InfluxError(`InfluxDB ${this.target.redacted}: ${e.message}`, 0, true)));
        },
      );
      req.setTimeout(this.#timeoutMs, () => req.destroy(new Error(`no answer within ${this.#timeoutMs} ms`)));
      req.on('error', (e: NodeJS.ErrnoException) => {
        // refused/unreachable: the request never left, so nothing can have been written
        const notSent = e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === 'EHOSTUNREACH' || e.code === 'ENETUNREACH';
        reject(new InfluxError(`InfluxDB ${this.target.redacted} unreachable: ${e.message}`, 0, !notSent));
      });
      req.end(body);
    });
  }

  static #errorText(body: Buffer): string {
    const text = body.toString('utf8').trim();
    try {
      const parsed = JSON.parse(text) as { error?: unknown };
      if (typeof parsed.error === 'string') return parsed.error;
    } catch {
      /* not JSON */
    }
    return text.slice(0, 300);
  }

  /** Writes gzip-compressed line protocol (ns precision). Throws InfluxError unless InfluxDB answers 204. */
  async writeGzip(gzipped: Buffer): Promise<void> {
    const path = `/write?db=${encodeURIComponent(this.target.database)}&precision=ns`;
    const res = await this.#request('POST', path, gzipped, { 'Content-Encoding': 'gzip', 'Content-Type': 'text/plain; charset=utf-8' });
    if (res.status === 204) return;
    // 4xx: InfluxDB refused the batch, nothing written (a partial write says so and is retried whole)
    throw new InfluxError(`InfluxDB ${this.target.redacted} /write answered ${res.status}: ${InfluxClient.#errorText(res.body)}`, res.status, res.status >= 500);
  }

  /**
   * Runs InfluxQL (statements separated by ';') against the database; returns one result per statement.
   * `maxRows`: stop reading (InfluxError 413) once the answer holds more rows than this, so that a huge
   * answer never sits whole in memory.
   */
  async query(q: string, opts: { maxRows?: number; method?: 'GET' | 'POST' } = {}): Promise<InfluxStatementResult[]> {
    const params = new URLSearchParams({ db: this.target.database, q });
    const chunked = opts.maxRows !== undefined;
    if (chunked) {
      params.set('chunked', 'true');
      params.set('chunk_size', '10000');
    }
    const results = new Map<number, InfluxStatementResult>();
    let rows = 0;
    // the text after the last newline, in pieces: a chunk of 10,000 points is one line of a few MB
    let pending: string[] = [];
    const decoder = new StringDecoder('utf8');
    let tooMany = false;
    let broken: unknown;
    const take = (line: string) => {
      if (line.trim() === '') return;
      const parsed = JSON.parse(line) as { results?: InfluxStatementResult[]; error?: string };
      if (parsed.error) throw new InfluxError(`InfluxDB ${this.target.redacted}: ${parsed.error}`, 400, false);
      for (const r of parsed.results ?? []) {
        const into = results.get(r.statement_id) ?? { statement_id: r.statement_id };
        results.set(r.statement_id, into);
        if (r.error) into.error = r.error;
        for (const s of r.series ?? []) {
          rows += s.values?.length ?? 0;
          // chunks of one series arrive as several series objects with the same name and tags: keep them apart, callers merge rows
          (into.series ??= []).push(s);
        }
      }
      if (opts.maxRows !== undefined && rows > opts.maxRows) tooMany = true;
    };
    const onData = chunked
      ? (chunk: Buffer) => {
          if (tooMany || broken !== undefined) return;
          let text = decoder.write(chunk); // a character split between two chunks waits for the second
          let nl: number;
          try {
            while (!tooMany && (nl = text.indexOf('\n')) >= 0) {
              pending.push(text.slice(0, nl));
              take(pending.join(''));
              pending = [];
              text = text.slice(nl + 1);
            }
            if (text !== '') pending.push(text);
          } catch (e) {
            broken = e; // thrown after the answer ended, not from inside the socket's handler
          }
        }
      : undefined;
    const method = opts.method ?? 'GET';
    const res =
      method === 'GET'
        ? await this.#request('GET', `/query?${params}`, undefined, {}, onData)
        : await this.#request('POST', '/query', Buffer.from(params.toString()), { 'Content-Type': 'application/x-www-form-urlencoded' }, onData);
    if (res.status !== 200) {
      throw new InfluxError(`InfluxDB ${this.target.redacted} /query answered ${res.status}: ${InfluxClient.#errorText(res.body)}`, res.status, false);
    }
    if (broken !== undefined) throw broken;
    if (tooMany) throw new InfluxError(`the answer holds more than ${opts.maxRows} rows`, 413, false);
    if (chunked) take(pending.join(''));
    else take(res.body.toString('utf8'));
    const out = [...results.values()].sort((a, b) => a.statement_id - b.statement_id);
    for (const r of out) if (r.error) throw new InfluxError(`InfluxDB ${this.target.redacted}: ${r.error}`, 400, false);
    return out;
  }

  /** CREATE DATABASE (a no-op when it exists). Throws InfluxError, e.g. 403 without admin rights. */
  async createDatabase(): Promise<void> {
    await this.query(`CREATE DATABASE ${quoteIdent(this.target.database)}`, { method: 'POST' });
  }

  close(): void {
    this.#agent.destroy();
  }
}
