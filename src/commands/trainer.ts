// `edgecv trainer import FILE --addr https://host:8008 [--admin-key K] [--mode append|replace] [--batch N]
//  [--cacert FILE | --insecure]`: sends a JSON-lines gallery file (the /trainer/export/ format, or photo lines) to
// /trainer/import/ in batches, with a progress line.
//
// Resumable: each batch is one all-or-nothing request, committed in file order, and FILE.progress records the
// lines the server has acknowledged. After a failure (server down, network cut, Ctrl-C) nothing acknowledged is
// lost, and the same command carries on after the last acknowledged batch. (A batch whose answer was lost after
// the server committed it is sent again: its samples are then enrolled twice.) In replace mode only the first
// batch replaces the gallery; the rest are appended.

import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { apiRequest, ClientError, normalizeAddr, type TlsChoice } from '../client/api-client.js';
import { ConfigError } from '../config.js';
import { JSONL_MEDIA_TYPE } from '../gallery/jsonl.js';
import { parseCommandArgs, requiredFlag, stringFlag } from './args.js';

export const TRAINER_USAGE = `usage: edgecv trainer import FILE --addr https://host:8008 [--admin-key KEY] [--mode append|replace]
         [--batch N] [--cacert FILE | --insecure]

FILE: JSON lines, as written by GET /trainer/export/ or {"subject":..., "image":"<base64>"} lines.
--admin-key defaults to $EDGECV_ADMIN_KEY (the server's --admin-key).
--batch: lines per request (default 500). Progress is kept in FILE.progress: run the same command again after
a failure to carry on where it stopped.`;

/** What FILE.progress holds. */
interface Progress {
  size: number;
  mtimeMs: number;
  mode: 'append' | 'replace';
  /** Lines (counting blank ones) the server has acknowledged. */
  lines: number;
  added: number;
  done: boolean;
}

const BUSY_RETRIES = 60;

async function countLines(file: string): Promise<number> {
  let lines = 0;
  let last = 10;
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
    if (chunk.length > 0) last = chunk[chunk.length - 1]!;
  }
  return last === 10 ? lines : lines + 1;
}

function readProgress(file: string, stat: fs.Stats, mode: Progress['mode']): Progress {
  const fresh: Progress = { size: stat.size, mtimeMs: stat.mtimeMs, mode, lines: 0, added: 0, done: false };
  let saved: Progress;
  try {
    saved = JSON.parse(fs.readFileSync(file, 'utf8')) as Progress;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return fresh;
    throw new ConfigError(`cannot read ${file}: ${(e as Error).message}; remove it to start the import over`);
  }
  if (saved.size !== stat.size || saved.mtimeMs !== stat.mtimeMs) {
    throw new ConfigError(`${file} belongs to another version of the import file: remove it to start the import over`);
  }
  if (saved.mode !== mode) throw new ConfigError(`${file} is from a --mode ${saved.mode} import: run it with --mode ${saved.mode}, or remove it`);
  return saved;
}

function writeProgress(file: string, p: Progress): void {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(p));
  fs.renameSync(tmp, file); // atomic: a crash leaves the old record or the new one
}

/** One import's settings, from the command line. */
interface ImportRun {
  file: string;
  progressFile: string;
  mode: Progress['mode'];
  batch: number;
  key?: string;
  tls: TlsChoice;
  /** The parsed flags: --addr is read once the file and its progress are checked. */
  parsed: ReturnType<typeof parseCommandArgs>;
}

function parseImportArgs(args: string[]): ImportRun {
  const [sub, ...rest] = args;
  if (sub !== 'import')
    throw new ConfigError(sub === undefined ? 'which one? only `trainer import` exists' : `unknown trainer subcommand '${sub}': only 'import'`);
  const fileArg = rest[0] !== undefined && !rest[0].startsWith('-') ? rest[0] : undefined;
  if (!fileArg) throw new ConfigError('give the JSON-lines file to import: edgecv trainer import FILE --addr ...');
  const p = parseCommandArgs(
    rest.slice(1),
    {
      addr: { type: 'string' },
      'admin-key': { type: 'string' },
      mode: { type: 'string' },
      batch: { type: 'string' },
      cacert: { type: 'string' },
      insecure: { type: 'boolean' },
    },
    [],
  );
  const mode = stringFlag(p, 'mode') ?? 'append';
  if (mode !== 'append' && mode !== 'replace') throw new ConfigError("--mode must be 'append' or 'replace'");
  const batchText = stringFlag(p, 'batch') ?? '500';
  const batch = Number(batchText);
  if (!/^\d+$/.test(batchText) || batch < 1 || batch > 100_000) throw new ConfigError('--batch must be an integer from 1 to 100000');
  const key = stringFlag(p, 'admin-key') ?? process.env['EDGECV_ADMIN_KEY'];
  const cacert = stringFlag(p, 'cacert');
  const tls: TlsChoice = p.flags['insecure'] === true ? { insecure: true } : cacert !== undefined ? { cacert: path.resolve(cacert) } : {};
  const file = path.resolve(fileArg);
  return { file, progressFile: `${file}.progress`, mode, batch, ...(key ? { key } : {}), tls, parsed: p };
}

/** The progress line: in place on a terminal, one line per batch otherwise. */
function progressLine(progress: Progress, total: number): (final: boolean) => void {
  const started = performance.now();
  const startLines = progress.lines;
  return (final) => {
    const pct = total > 0 ? ((100 * progress.lines) / total).toFixed(1) : '100.0';
    const rate = (progress.lines - startLines) / Math.max(0.001, (performance.now() - started) / 1000);
    const line = `imported ${progress.lines.toLocaleString('en')} / ${total.toLocaleString('en')} lines (${pct}%), ${progress.added.toLocaleString('en')} samples added, ${rate.toFixed(0)} lines/s`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line}${final ? '\n' : ''}`);
    else console.error(line);
  };
}

/** Sends one batch of `count` file lines; on its acknowledgement, records it in the progress file. */
async function sendBatch(
  run: ImportRun,
  addr: string,
  progress: Progress,
  show: (final: boolean) => void,
  lines: string[],
  count: number,
): Promise<void> {
  // The first batch of a replace import replaces; the rest (and every batch after a resume) append.
  const batchMode = run.mode === 'replace' && progress.lines === 0 ? 'replace' : 'append';
  if (lines.every((l) => l.trim() === '')) {
    progress.lines += count; // nothing to send: the server skips blank lines anyway
    return;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = (await apiRequest({
        addr,
        method: 'POST',
        path: `/trainer/import/?mode=${batchMode}`,
        raw: { contentType: JSONL_MEDIA_TYPE, text: lines.join('\n') },
        ...(run.key ? { token: run.key } : {}),
        tls: run.tls,
        timeoutMs: 600_000,
      })) as { added?: number };
      progress.lines += count;
      progress.added += answer.added ?? 0;
      writeProgress(run.progressFile, progress);
      show(false);
      return;
    } catch (e) {
      // 503: a training data update (another import, a resync) is in progress: wait for it.
      if (e instanceof ClientError && e.status === 503 && attempt < BUSY_RETRIES) {
        await new Promise((r) => setTimeout(r, 2000));
        continue;
      }
      if (e instanceof ClientError && e.status === 400) {
        throw new ClientError(`${e.message} (the line number counts from line ${progress.lines + 1} of ${run.file})`, 400);
      }
      throw e;
    }
  }
}

/** The file's lines after those already acknowledged, in batches of run.batch; then the progress file says done. */
async function importLines(run: ImportRun, progress: Progress): Promise<void> {
  const addr = normalizeAddr(requiredFlag(run.parsed, 'addr'));
  const total = await countLines(run.file);
  const show = progressLine(progress, total);
  if (progress.lines > 0) console.error(`carrying on after line ${progress.lines.toLocaleString('en')} (${run.progressFile})`);
  const reader = readline.createInterface({ input: fs.createReadStream(run.file), crlfDelay: Infinity });
  let lineNo = 0;
  let pending: string[] = [];
  let pendingCount = 0;
  for await (const line of reader) {
    lineNo++;
    if (lineNo <= progress.lines) continue;
    pending.push(line);
    pendingCount++;
    if (pending.length >= run.batch) {
      await sendBatch(run, addr, progress, show, pending, pendingCount);
      pending = [];
      pendingCount = 0;
    }
  }
  if (pendingCount > 0) await sendBatch(run, addr, progress, show, pending, pendingCount);
  progress.done = true;
  writeProgress(run.progressFile, progress);
  show(true);
}

export async function runTrainer(args: string[]): Promise<number> {
  const run = parseImportArgs(args);
  const { file, progressFile } = run;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (e) {
    console.error(`edgecv trainer import: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return 1;
  }
  const progress = readProgress(progressFile, stat, run.mode);
  if (progress.done) {
    console.error(
      `edgecv trainer import: ${file} was imported already (${progress.added} samples; see ${progressFile}): remove that file to import it again`,
    );
    return 1;
  }
  try {
    await importLines(run, progress);
    console.log(`imported ${file}: ${progress.added} samples added`);
    return 0;
  } catch (e) {
    if (!(e instanceof ClientError)) throw e;
    if (process.stderr.isTTY) process.stderr.write('\n');
    let message = e.message;
    if (e.status === 401 || e.status === 403) message += "\ngive the server's admin key with --admin-key or $EDGECV_ADMIN_KEY";
    console.error(`edgecv trainer import: ${message}`);
    console.error(`${progress.lines.toLocaleString('en')} lines are imported and kept; run the same command again to carry on.`);
    return 1;
  }
}
