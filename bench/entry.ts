// A bench run alone both ways: from bench/run.ts by its flag (`node dist/bench/run.js --library-paging ...`, the
// command the docs cite) and as its own program (`node dist/bench/library-paging.js ...`). The file exports its
// main, taking the command line's flags, and calls `runAsProgram(import.meta.url, main)`, which runs it only when
// the file is the program node was started with, so that importing it from run.ts runs nothing.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A bench run alone: its own flags in, tables printed. */
export type AloneBench = (argv: string[]) => Promise<void>;

/** Whether the module at `moduleUrl` is the program node was started with. */
export function isProgram(moduleUrl: string): boolean {
  return Boolean(process.argv[1]) && path.resolve(process.argv[1]!) === fileURLToPath(moduleUrl);
}

/** Runs `main` with the command line's flags when `moduleUrl` is the program; an error is printed, exit code 1. */
export async function runAsProgram(moduleUrl: string, main: AloneBench): Promise<void> {
  if (!isProgram(moduleUrl)) return;
  try {
    await main(process.argv.slice(2));
  } catch (err: unknown) {
    console.error(err);
    process.exitCode = 1;
  }
}
