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

/** An answer longer than the client's cap: the exchange was ended there. */
export class InfluxAnswerTooLarge extends InfluxError {
  override name = 'InfluxAnswerTooLarge';
  constructor(
    message: string,
    readonly capBytes: number,
  ) {
    super(message, 0, false);
  }
}

/**
 * InfluxDB stored some points of a /write and refused the rest (400 "partial write: ... dropped=N", or
 * "unable to parse ..." for the lines it could not read): sending the batch again cannot help.
 */
export class InfluxPointsRefused extends InfluxError {
  override name = 'InfluxPointsRefused';
  constructor(
    message: string,
    /** Points InfluxDB said it dropped, when it said (partial write: dropped=N). */
    readonly dropped: number | undefined,
  ) {
    super(message, 400, true);
  }
}

/** Bytes of one InfluxDB answer read at most by default: 64 MiB. */
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;

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
  /** The URL without any user part: what unauthenticated readers (/server/usage/, /metrics) are shown. */
  address: string;
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
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InfluxUrlError(`InfluxDB URL must be http:// or https:// (got ${url.protocol})`);
  if (url.search !== '' || url.hash !== '') throw new InfluxUrlError('InfluxDB URL takes no ?query or #fragment: http(s)://host:8086/database');
  const segments = url.pathname.split('/').filter((s) => s !== '');
  if (segments.length !== 1) throw new InfluxUrlError('InfluxDB URL must name the database as its path: http(s)://host:8086/database');
  const decode = (part: string, what: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new InfluxUrlError(`InfluxDB URL: the ${what} holds a malformed %-escape (write % as %25)`);
    }
  };
  const database = decode(segments[0]!, 'database name');
  let auth: InfluxAuth | undefined;
  if (url.username !== '') auth = { username: decode(url.username, 'user name'), password: decode(url.password, 'password') };
  if (files.credentials !== undefined) auth = readCredentialsFile(files.credentials);
  let ca: string | undefined;
  if (files.ca !== undefined) {
    try {
      ca = fs.readFileSync(files.ca, 'utf8');
    } catch (e) {
      throw new InfluxUrlError(`cannot read the InfluxDB CA file ${files.ca}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  // a user part alone is a token (InfluxDB 2's style): hidden whole, as a password is
  const userinfo = url.username === '' ? '' : url.password === '' ? '***@' : `${url.username}:***@`;
  return {
    origin: url.origin,
    database,
    auth,
    ca,
    redacted: `${url.protocol}//${userinfo}${url.host}/${segments[0]}`,
    address: `${url.protocol}//${url.host}/${segments[0]}`,
  };
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
  /** ms an exchange may take in all, the whole answer included (default 10 s). */
  timeoutMs?: number;
  /** Bytes of one answer read at most (default DEFAULT_MAX_ANSWER_BYTES); more ends the exchange. */
  maxAnswerBytes?: number;
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

/**
 * Points per chunk of a chunked answer: each chunk is one JSON line parsed at once on the event loop, so it is
 * kept small (1,000 points of the widest series are ~0.3 MB, parsed in a few ms).
 */
const CHUNK_POINTS = 1000;
/** Characters of one chunk at most: far more than CHUNK_POINTS points make; a longer line ends the read. */
const MAX_CHUNK_CHARS = 4 * 1024 * 1024;

/** The shape the callers read: series with a name, a list of columns and a list of rows. */
function isStatementResult(r: unknown): r is InfluxStatementResult {
  if (typeof r !== 'object' || r === null || typeof (r as { statement_id?: unknown }).statement_id !== 'number') return false;
  const series = (r as { series?: unknown }).series;
  if (series === undefined) return true;
  return (
    Array.isArray(series) &&
    series.every(
      (s: unknown) =>
        typeof s === 'object' &&
        s !== null &&
        Array.isArray((s as InfluxSeries).columns) &&
        (s as InfluxSeries).columns.every((c) => typeof c === 'string') &&
        Array.isArray((s as InfluxSeries).values) &&
        (s as InfluxSeries).values.every((v) => Array.isArray(v)),
    )
  );
}

export class InfluxClient {
  readonly target: InfluxTarget;
  readonly #agent: http.Agent;
  readonly #timeoutMs: number;
  readonly #maxAnswerBytes: number;
  /** Every exchange still running, by the function that ends it. */
  readonly #inFlight = new Set<(error: InfluxError) => void>();

  constructor(target: InfluxTarget, opts: InfluxClientOptions = {}) {
    this.target = target;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#maxAnswerBytes = opts.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 4 };
    this.#agent = target.origin.startsWith('https:') ? new https.Agent({ ...agentOpts, ca: target.ca }) : new http.Agent(agentOpts);
  }

  #headers(): Record<string, string> {
    const auth = this.target.auth;
    if (!auth) return {};
    if ('token' in auth) return { Authorization: `Token ${auth.token}` };
    return { Authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
  }

  /**
   * One exchange with InfluxDB, bounded as a whole: connect, send, and the answer to its last byte within
   * timeoutMs (a socket idle timeout would let an answer that trickles a byte now and then run forever),
   * and at most maxAnswerBytes of answer. close() ends every exchange still running.
   */
  #request(
    method: string,
    path: string,
    body: Buffer | undefined,
    headers: Record<string, string>,
    onData?: (chunk: Buffer) => void,
  ): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const mod = this.target.origin.startsWith('https:') ? https : http;
      let settled = false;
      let res: http.IncomingMessage | undefined;
      const finish = (error: InfluxError | undefined, answer?: { status: number; body: Buffer }) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        this.#inFlight.delete(abort);
        if (error) reject(error);
        else resolve(answer!);
      };
      const abort = (error: InfluxError) => {
        finish(error);
        if (res) res.destroy();
        req.destroy();
      };
      const req = mod.request(
        `${this.target.origin}${path}`,
        { method, agent: this.#agent, headers: { ...this.#headers(), ...headers, ...(body ? { 'Content-Length': String(body.length) } : {}) } },
        (answer) => {
          res = answer;
          const chunks: Buffer[] = [];
          let bytes = 0;
          answer.on('data', (d: Buffer) => {
            bytes += d.length;
            if (bytes > this.#maxAnswerBytes) {
              abort(
                new InfluxAnswerTooLarge(`InfluxDB ${this.target.address} answered more than ${this.#maxAnswerBytes} bytes`, this.#maxAnswerBytes),
              );
              return;
            }
            if (onData && answer.statusCode === 200) onData(d);
            else chunks.push(d);
          });
          answer.on('end', () => finish(undefined, { status: answer.statusCode ?? 0, body: Buffer.concat(chunks) }));
          answer.on('error', (e) => finish(new InfluxError(`InfluxDB ${this.target.address}: ${e.message}`, 0, true)));
          answer.on('close', () => {
            if (!answer.complete) finish(new InfluxError(`InfluxDB ${this.target.address}: the answer was cut off`, 0, true));
          });
        },
      );
      const deadline = setTimeout(
        () => abort(new InfluxError(`InfluxDB ${this.target.address}: no complete answer within ${this.#timeoutMs} ms`, 0, true)),
        this.#timeoutMs,
      );
      this.#inFlight.add(abort);
      req.on('error', (e: NodeJS.ErrnoException) => {
        // refused/unreachable: the request never left, so nothing can have been written
        const notSent = e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === 'EHOSTUNREACH' || e.code === 'ENETUNREACH';
        finish(new InfluxError(`InfluxDB ${this.target.address} unreachable: ${e.message}`, 0, !notSent));
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
    const text = InfluxClient.#errorText(res.body);
    const message = `InfluxDB ${this.target.address} /write answered ${res.status}: ${text}`;
    // 400 partial write / unable to parse: what InfluxDB could store it stored, the rest it will never take
    if (res.status === 400 && /partial write|unable to parse/i.test(text)) {
      const dropped = /dropped=(\d+)/.exec(text);
      throw new InfluxPointsRefused(message, dropped ? Number(dropped[1]) : undefined);
    }
    // another 4xx (no such database, no rights): nothing written, sent again later
    throw new InfluxError(message, res.status, res.status >= 500);
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
      params.set('chunk_size', String(CHUNK_POINTS));
    }
    const results = new Map<number, InfluxStatementResult>();
    let rows = 0;
    // the text after the last newline, in pieces: a chunk is one line, and a socket read may end inside it
    let pending: string[] = [];
    let pendingLength = 0;
    const decoder = new StringDecoder('utf8');
    let tooMany = false;
    let broken: unknown;
    const take = (line: string) => {
      if (line.trim() === '') return;
      const parsed = JSON.parse(line) as { results?: InfluxStatementResult[]; error?: string };
      if (parsed.error) throw new InfluxError(`InfluxDB ${this.target.address}: ${parsed.error}`, 400, false);
      for (const r of parsed.results ?? []) {
        if (!isStatementResult(r))
          throw new InfluxError(
            `InfluxDB ${this.target.address}: an answer that is not InfluxDB's (a series without name, columns or values)`,
            0,
            false,
          );
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
              pendingLength = 0;
              text = text.slice(nl + 1);
            }
            if (text !== '') pending.push(text);
            // a chunk of CHUNK_POINTS points is well under a MB: parsing much more at once would stall the event loop
            pendingLength += text.length;
            if (pendingLength > MAX_CHUNK_CHARS)
              throw new InfluxError(`InfluxDB ${this.target.address}: an answer chunk longer than ${MAX_CHUNK_CHARS} characters`, 0, false);
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
      throw new InfluxError(`InfluxDB ${this.target.address} /query answered ${res.status}: ${InfluxClient.#errorText(res.body)}`, res.status, false);
    }
    if (broken !== undefined) throw broken;
    if (tooMany) throw new InfluxError(`the answer holds more than ${opts.maxRows} rows`, 413, false);
    if (chunked) take(pending.join(''));
    else take(res.body.toString('utf8'));
    const out = [...results.values()].sort((a, b) => a.statement_id - b.statement_id);
    for (const r of out) if (r.error) throw new InfluxError(`InfluxDB ${this.target.address}: ${r.error}`, 400, false);
    return out;
  }

  /** CREATE DATABASE (a no-op when it exists). Throws InfluxError, e.g. 403 without admin rights. */
  async createDatabase(): Promise<void> {
    await this.query(`CREATE DATABASE ${quoteIdent(this.target.database)}`, { method: 'POST' });
  }

  /** Ends every exchange still running (each rejects with InfluxError status 0) and the kept connections. */
  close(): void {
    for (const abort of [...this.#inFlight]) abort(new InfluxError(`InfluxDB ${this.target.address}: closed while waiting for an answer`, 0, true));
    this.#agent.destroy();
  }
}
