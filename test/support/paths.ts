import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Path of a test photo fetched by set-up (`npm test` runs it first). */
export function testData(relative: string): string {
  const path = join(repoRoot, 'test', 'data', relative);
  if (!existsSync(path)) throw new Error(`missing test photo ${relative}: run \`node scripts/setup.mjs --test\``);
  return path;
}
