// Reading a form body (multipart/form-data or application/x-www-form-urlencoded) as it streams in, with bounds
// A form of 150,000 one-byte parts is under the body limit, and parsing all of it at once on
// the event loop (Request.formData()) stalled every client for seconds; so the body is parsed chunk by chunk
// (busboy for multipart), and reading stops at the first part or pair over FORM_LIMITS: the answer is a 413 at
// once, and the rest of the body is read and dropped unparsed. `onField` sees each text field as it arrives, so
// that a route can refuse a request (a wrong api_key) without reading the rest of its body.

import busboy from 'busboy';
import type { Context } from 'hono';
import { HttpError } from './errors.js';

/** The most parts (fields and files) or pairs a form may have; the most file parts. */
export const FORM_LIMITS = {
  parts: 256,
  files: 64,
  /** Header lines of one multipart part (Content-Disposition, Content-Type, a few more). */
  partHeaders: 16,
} as const;

/** A file part of a multipart form. */
export interface FormFile {
  name: string;
  bytes: Buffer;
}

/** The parts of a form body: text fields (the first value of a name wins) and file parts, in order. */
export interface FormParts {
  via: 'multipart' | 'urlencoded';
  fields: Map<string, string>;
  files: FormFile[];
  /** Text field names that came more than once (a route that must not guess which one was meant refuses them). */
  repeated: Set<string>;
}

export interface FormReadOptions {
  /** Called with every text field as it is read; an error it throws stops reading and is the answer. */
  onField?: (name: string, value: string) => void;
  /** The answer when a form goes over FORM_LIMITS; undefined: 413. */
  overLimit?: (what: string) => Error | undefined;
}

export const MULTIPART = 'multipart/form-data';
export const URLENCODED = 'application/x-www-form-urlencoded';

function tooMany(what: string, opts: FormReadOptions): Error {
  return (
    opts.overLimit?.(what) ??
    new HttpError(413, `${what}: this server reads at most ${FORM_LIMITS.parts} form fields, ${FORM_LIMITS.files} of them files`)
  );
}

/** Stops a read of the body from inside a chunk handler; the error is the answer. */
class StopReading extends Error {
  constructor(readonly answer: Error) {
    super(answer.message);
  }
}

/**
 * Feeds the request body to `onChunk` as it arrives (through the app's body-limit middleware). A throw from
 * onChunk stops parsing and is the answer, sent at once; what is left of the body is then read and dropped in
 * the background at REFUSED_BODY_BYTES_PER_SEC, so that the client, still sending, reads the answer instead of a
 * reset, and four clients sending 18 MB forms in a loop cannot keep the event loop busy decrypting what it refuses.
 */
async function streamBody(c: Context, onChunk: (chunk: Uint8Array) => void): Promise<void> {
  const body = c.req.raw.body;
  if (!body) return;
  const reader = body.getReader();
  for (;;) {
    let next: Awaited<ReturnType<typeof reader.read>>;
    try {
      next = await reader.read();
    } catch (e) {
      throw new HttpError(400, `could not read the request body: ${(e as Error).message}`);
    }
    if (next.done) return;
    try {
      onChunk(next.value);
    } catch (e) {
      if (!(e instanceof StopReading)) {
        reader.cancel().catch(() => {});
        throw e;
      }
      void dropRest(reader);
      throw e.answer;
    }
  }
}

/**
 * How fast the rest of a refused form is read and dropped. The socket is paused while nobody reads, so this
 * is the rate the client can send it at; the connection's linger bounds the time (http-guards.ts).
 */
export const REFUSED_BODY_BYTES_PER_SEC = 4 * 1024 * 1024;

/** Reads a refused body to its end at REFUSED_BODY_BYTES_PER_SEC, keeping nothing. */
async function dropRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  const t0 = performance.now();
  let bytes = 0;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return;
      bytes += next.value.byteLength;
      const aheadMs = (bytes / REFUSED_BODY_BYTES_PER_SEC) * 1000 - (performance.now() - t0);
      if (aheadMs > 0) await new Promise((resolve) => setTimeout(resolve, aheadMs));
    }
  } catch {
    // the connection went away: nothing left to drop
  }
}

/** Keeps the first value of a field name; a name that comes again is noted as repeated. */
function keepField(fields: Map<string, string>, repeated: Set<string>, name: string, value: string): void {
  if (fields.has(name)) repeated.add(name);
  else fields.set(name, value);
}

async function multipartParts(c: Context, opts: FormReadOptions): Promise<FormParts> {
  const fields = new Map<string, string>();
  const repeated = new Set<string>();
  const files: FormFile[] = [];
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': c.req.header('content-type') ?? '' },
      limits: {
        // busboy reports 'partsLimit' when the count is reached, 'filesLimit'/'fieldsLimit' when it is passed
        parts: FORM_LIMITS.parts + 1,
        files: FORM_LIMITS.files,
        fields: FORM_LIMITS.parts,
        headerPairs: FORM_LIMITS.partHeaders,
        // a base64 image may be one text field: the body limit bounds it
        fieldSize: Number.MAX_SAFE_INTEGER,
        fieldNameSize: 1024,
      },
    });
  } catch (e) {
    throw new HttpError(400, `malformed multipart/form-data body: ${(e as Error).message}`);
  }
  // busboy reports through events while a chunk is written: the first problem is kept and thrown after the write
  let problem: Error | undefined;
  const fail = (e: Error) => (problem ??= e);
  const fileReads: Promise<void>[] = [];
  parser.on('field', (name, value) => {
    if (problem) return;
    try {
      opts.onField?.(name, value);
    } catch (e) {
      fail(e as Error);
      return;
    }
    keepField(fields, repeated, name, value);
  });
  parser.on('file', (name, stream) => {
    const file: FormFile = { name, bytes: Buffer.alloc(0) };
    files.push(file);
    const chunks: Buffer[] = [];
    stream.on('data', (d: Buffer) => chunks.push(d));
    // a form cut inside a file part errors the part too; the parser's own error is the answer
    stream.on('error', () => {});
    fileReads.push(
      new Promise<void>((resolve) => {
        stream.once('close', () => {
          file.bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          resolve();
        });
      }),
    );
  });
  parser.on('partsLimit', () => fail(tooMany(`more than ${FORM_LIMITS.parts} parts in the form`, opts)));
  parser.on('fieldsLimit', () => fail(tooMany(`more than ${FORM_LIMITS.parts} fields in the form`, opts)));
  parser.on('filesLimit', () => fail(tooMany(`more than ${FORM_LIMITS.files} files in the form`, opts)));
  const closed = new Promise<void>((resolve) => {
    parser.once('close', resolve);
    // 'on', not 'once': busboy can report a second error (a cut form's "Unexpected end of form" after the
    // first), and an 'error' with no listener would take the process down.
    parser.on('error', (e: Error) => {
      fail(new HttpError(400, `malformed multipart/form-data body: ${e.message}`));
      resolve();
    });
  });

  try {
    await streamBody(c, (chunk) => {
      parser.write(chunk);
      if (problem) throw new StopReading(problem);
    });
  } catch (e) {
    parser.destroy();
    throw e;
  }
  parser.end();
  await closed;
  if (problem) throw problem;
  await Promise.all(fileReads);
  return { via: 'multipart', fields, files, repeated };
}

function decodeComponent(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    throw new HttpError(400, 'malformed application/x-www-form-urlencoded body (bad %-escape)');
  }
}

const AMPERSAND = 0x26;

async function urlencodedParts(c: Context, opts: FormReadOptions): Promise<FormParts> {
  const chunks: Buffer[] = [];
  // pairs are counted (a native byte search for '&') as the body arrives, and nothing is split before the whole
  // body is known to have few enough: a pair starts at the first byte, and after every '&' not followed by another
  let pairs = 0;
  let afterAmpersand = true;
  await streamBody(c, (chunk) => {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length === 0) return;
    if (afterAmpersand && buf[0] !== AMPERSAND) pairs++;
    for (let i = buf.indexOf(AMPERSAND); i >= 0; i = buf.indexOf(AMPERSAND, i + 1)) {
      if (i + 1 < buf.length && buf[i + 1] !== AMPERSAND) pairs++;
    }
    afterAmpersand = buf[buf.length - 1] === AMPERSAND;
    if (pairs > FORM_LIMITS.parts) throw new StopReading(tooMany(`more than ${FORM_LIMITS.parts} parameters in the form`, opts));
    chunks.push(buf);
  });
  const text = Buffer.concat(chunks).toString('utf8');
  const fields = new Map<string, string>();
  const repeated = new Set<string>();
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decodeComponent(eq < 0 ? pair : pair.slice(0, eq));
    // a base64 image's '+' becomes ' ' here; decodeBase64Image turns it back
    const value = decodeComponent(eq < 0 ? '' : pair.slice(eq + 1));
    opts.onField?.(key, value);
    keepField(fields, repeated, key, value);
  }
  return { via: 'urlencoded', fields, files: [], repeated };
}

/** The fields and files of a multipart/form-data or urlencoded body; null for any other Content-Type. */
export async function readFormParts(c: Context, type: string, opts: FormReadOptions = {}): Promise<FormParts | null> {
  if (type === MULTIPART) return multipartParts(c, opts);
  if (type === URLENCODED) return urlencodedParts(c, opts);
  return null;
}
