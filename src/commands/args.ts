// Argument parsing shared by the client commands: --flags, plus key=value words (mcctl style).

import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';

export interface ParsedArgs {
  flags: Record<string, string | boolean | string[] | undefined>;
  /** key=value words, by key. */
  keys: Map<string, string>;
}

export function parseCommandArgs(
  args: readonly string[],
  flags: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>,
  allowedKeys: readonly string[],
): ParsedArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: flags, strict: true, allowPositionals: true });
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  const keys = new Map<string, string>();
  for (const word of parsed.positionals) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new ConfigError(`unexpected argument '${word}': expected key=value (${allowedKeys.join(', ')})`);
    const key = word.slice(0, eq);
    if (!allowedKeys.includes(key)) throw new ConfigError(`unknown key '${key}': expected one of ${allowedKeys.join(', ')}`);
    if (keys.has(key)) throw new ConfigError(`'${key}' given twice`);
    keys.set(key, word.slice(eq + 1));
  }
  return { flags: parsed.values as ParsedArgs['flags'], keys };
}

export function stringFlag(p: ParsedArgs, name: string): string | undefined {
  const v = p.flags[name];
  return typeof v === 'string' ? v : undefined;
}

export function requiredFlag(p: ParsedArgs, name: string): string {
  const v = stringFlag(p, name);
  if (v === undefined || v === '') throw new ConfigError(`--${name} is required`);
  return v;
}

export function requiredKey(p: ParsedArgs, key: string): string {
  const v = p.keys.get(key);
  if (v === undefined || v === '') throw new ConfigError(`${key}=... is required`);
  return v;
}

export function positiveIntKey(p: ParsedArgs, key: string): number | undefined {
  const v = p.keys.get(key);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) throw new ConfigError(`${key} must be a positive integer (got '${v}')`);
  return Number(v);
}
