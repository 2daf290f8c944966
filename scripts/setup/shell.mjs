// The scripts' shared helpers: one error type for a failed step, shell quoting for logs, and running a command.
//
// Plain Node ESM with no npm dependencies: scripts/setup/setup.mjs runs it before `npm ci`.

import { spawnSync } from 'node:child_process';

/** A set-up step that failed; its message says what to do or the exact command that failed. */
export class StepError extends Error {}

export function quote(a) {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** Runs a command; on failure throws a StepError with the exact command line. opts.log prints the line. */
export function run(cmd, args, opts = {}) {
  const line = [cmd, ...args].map(quote).join(' ');
  if (!opts.quiet) (opts.log ?? console.log)(`$ ${opts.label ?? line}`);
  const r = spawnSync(cmd, args, {
    stdio: opts.capture ? ['ignore', 'pipe', 'inherit'] : opts.input ? ['pipe', 'inherit', 'inherit'] : 'inherit',
    maxBuffer: 1 << 30,
    ...opts,
  });
  if (r.error || r.status !== 0) {
    const why = r.error ? r.error.message : `exit ${r.status ?? r.signal}`;
    throw new StepError(`command failed (${why}): ${opts.cwd ? `(cd ${quote(opts.cwd)} && ${line})` : line}`);
  }
  return r;
}

/** Runs a command and returns its standard output as text, trimmed; a StepError when it fails. */
export function capture(cmd, args, opts = {}) {
  return run(cmd, args, { quiet: true, capture: true, ...opts })
    .stdout.toString()
    .trim();
}
