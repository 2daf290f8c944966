// README's options table is the user's list of server options, so it must follow SERVER_OPTIONS (src/config.ts):
// every option has a row naming its flag and its environment variable, no row names a flag the server does not
// have, and no `--flag` anywhere in README is one that neither `edgecv serve` nor another edgecv command takes
// (curl's own flags in the examples aside). The checker is also run on altered copies, so it can fail.

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVER_OPTIONS } from '../src/config.js';
import { BENCH_USAGE } from '../src/commands/bench.js';
import { LOGIN_USAGE, LOGOUT_USAGE } from '../src/commands/login.js';
import { METRICS_USAGE } from '../src/commands/metrics.js';
import { TRAINER_USAGE } from '../src/commands/trainer.js';
import { USER_USAGE } from '../src/commands/user.js';
import { CONSOLE_USAGE } from '../src/console/usage.js';
import { ROOT } from './helpers.js';

const TABLE_START = '<!-- options-table';
const TABLE_END = '<!-- /options-table -->';

interface Option {
  flag: string;
  env: string;
}

const FLAG = /(?<![\w-])--([a-z][a-z0-9-]*)/g;

const flagsIn = (text: string): string[] => [...text.matchAll(FLAG)].map((m) => m[1]!);

/** What is wrong with README's options table and its flags; empty when nothing is. */
export function readmeOptionProblems(readme: string, options: readonly Option[], otherCommandFlags: ReadonlySet<string>): string[] {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start) return [`no options table between '${TABLE_START}' and '${TABLE_END}'`];
  const rows = readme
    .slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*-/.test(l))
    .slice(1) // the header
    .map((l) => l.split('|').map((cell) => cell.trim()));
  const problems: string[] = [];
  const serverFlags = new Set(options.map((o) => o.flag));
  for (const o of options) {
    const row = rows.find((cells) => flagsIn(cells[1] ?? '').includes(o.flag));
    if (!row) problems.push(`--${o.flag} has no row in the options table`);
    else if (!(row[2] ?? '').split(/[`,\s]+/).includes(o.env)) problems.push(`--${o.flag}'s row does not name ${o.env}`);
  }
  for (const cells of rows) {
    const named = flagsIn(cells[1] ?? '');
    if (named.length === 0) problems.push(`a row of the options table names no flag: ${cells.join(' | ')}`);
    for (const flag of named) if (!serverFlags.has(flag)) problems.push(`the options table names --${flag}, which is not a server option`);
  }
  readme.split('\n').forEach((line, i) => {
    if (/^\s*(#\s*)?curl\s/.test(line)) return; // curl's flags
    for (const flag of flagsIn(line)) {
      if (!serverFlags.has(flag) && !otherCommandFlags.has(flag))
        problems.push(`README line ${i + 1} names --${flag}, which no edgecv command takes`);
    }
  });
  return problems;
}

const options: Option[] = Object.values(SERVER_OPTIONS).map((o) => ({ flag: o.flag, env: o.env }));
const otherCommandFlags = new Set([
  'help',
  ...[BENCH_USAGE, LOGIN_USAGE, LOGOUT_USAGE, METRICS_USAGE, TRAINER_USAGE, USER_USAGE, CONSOLE_USAGE].flatMap(flagsIn),
]);
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe("README's options table", () => {
  it('names every server option with its variable, and no flag the server lacks', () => {
    expect(readmeOptionProblems(readme, options, otherCommandFlags)).toEqual([]);
  });

  it('fails when an option has no row, a row names the wrong variable, or README names an unknown flag', () => {
    const port = SERVER_OPTIONS.port;
    const withoutPort = readme
      .split('\n')
      .filter((l) => !l.startsWith(`| \`--${port.flag}\` |`))
      .join('\n');
    expect(withoutPort).not.toBe(readme);
    expect(readmeOptionProblems(withoutPort, options, otherCommandFlags)).toEqual([`--${port.flag} has no row in the options table`]);

    const wrongEnv = readme.replace(`| \`--${port.flag}\` | \`${port.env}\` |`, `| \`--${port.flag}\` | \`EDGECV_PORTS\` |`);
    expect(wrongEnv).not.toBe(readme);
    expect(readmeOptionProblems(wrongEnv, options, otherCommandFlags)).toEqual([`--${port.flag}'s row does not name ${port.env}`]);

    const extraRow = readme.replace(TABLE_END, `| \`--turbo\` | \`EDGECV_TURBO\` | off | faster |\n${TABLE_END}`);
    expect(readmeOptionProblems(extraRow, options, otherCommandFlags)).toEqual([
      'the options table names --turbo, which is not a server option',
      expect.stringMatching(/^README line \d+ names --turbo, which no edgecv command takes$/),
    ]);

    const prose = `${readme}\nStart it with \`--idle-core keep\`.\n`;
    expect(readmeOptionProblems(prose, options, otherCommandFlags)).toEqual([
      expect.stringMatching(/^README line \d+ names --idle-core, which no edgecv command takes$/),
    ]);
    // curl's flags are curl's
    expect(readmeOptionProblems(`${readme}\ncurl -k --data-binary @a.jpg https://localhost:8008/\n`, options, otherCommandFlags)).toEqual([]);
  });
});
