// Bytes held under a folder: the sum of the sizes of its files, walked recursively without following links.

import fs from 'node:fs/promises';
import path from 'node:path';

export async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return 0; // gone or unreadable: holds nothing we can count
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      total += await folderBytes(p);
    } else if (e.isFile()) {
      try {
        total += (await fs.lstat(p)).size;
      } catch {
        /* removed while walking */
      }
    }
  }
  return total;
}
