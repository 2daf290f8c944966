// A bench run alone both ways: from its runner by a flag (`node dist/bench/run.js --library-paging ...`,
// `node dist/bench/fuzz/fuzz.js --overload ...`: the commands the docs cite) and as its own program
// (`node dist/bench/library-paging.js ...`). The file exports its main, taking the command line's flags, and calls
// `runAsProgram(import.meta.url, main)`, which runs it only when the file is the program node was started with, so
// that importing it from a runner runs nothing.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A bench run alone: its own flags in, tables printed; a number is the exit code (the fuzz side's pass or fail). */
export type AloneBench = (argv: string[]) => Promise<void | number>;

/** Whether the module at `moduleUrl` is the program node was started with. */
export function isProgram(moduleUrl: string): boolean {
  return Boolean(process.argv[1]) && path.resolve(process.argv[1]!) === fileURLToPath(moduleUrl);
}

/**
 * Runs `main` with the command line's flags when `moduleUrl` is the program; an error is printed, exit code 1.
 * `exit`: end the process when main is done (for benches whose keep-alive clients or servers would hold it open).
 */
export async function runAsProgram(moduleUrl: string, main: AloneBench, { exit = false } = {}): Promise<void> {
  if (!isProgram(moduleUrl)) return;
  try {
    const code = await main(process.argv.slice(2));
    if (typeof code === 'number') process.exitCode = code;
  } catch (err: unknown) {
    console.error(err);
    process.exitCode = 1;
  }
  if (exit) process.exit();
}
