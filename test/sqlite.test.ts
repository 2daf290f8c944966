// Which better-sqlite3 build src/sqlite.ts loads (13 on Node-API 10, the Node 20 alias of 12 otherwise), and that
// statements and databases the garbage collector frees do not take the process down: better-sqlite3 12 aborts
// there on Node 24.19+ (docs/testing.md), which `npm run test:node -- 24` would show with this test.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { Database, SQLITE_PACKAGE } from '../src/sqlite.js';
import { ROOT } from './helpers.js';

describe('SQLite driver', () => {
  it('loads better-sqlite3 13 where Node-API 10 is there, else the Node 20 build of 12', () => {
    const napi10 = Number(process.versions.napi) >= 10;
    expect(SQLITE_PACKAGE).toBe(napi10 ? 'better-sqlite3' : 'better-sqlite3-node20');
    const { version } = createRequire(import.meta.url)(`${SQLITE_PACKAGE}/package.json`) as { version: string };
    expect(Number(version.split('.')[0])).toBe(napi10 ? 13 : 12);
    const db = new Database(':memory:');
    expect(db.prepare('select 6 * 7 as v').get()).toEqual({ v: 42 });
    db.close();
  });

  it('survives the collector freeing thousands of statements and closed databases', () => {
    const script = `
      const { Database } = await import(${JSON.stringify(`${ROOT}/dist/src/sqlite.js`)});
      for (let d = 0; d < 20; d++) {
        const db = new Database(':memory:');
        db.exec('create table t (a)');
        for (let i = 0; i < 200; i++) db.prepare('insert into t values (?)').run(i);
        db.close();
      }
      for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
      console.log('ok');`;
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect([r.status, r.signal, r.stdout.trim()]).toEqual([0, null, 'ok']);
  });
});
