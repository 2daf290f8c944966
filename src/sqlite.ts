// SQLite for the stores (metrics, gallery): which better-sqlite3 build this Node loads, and prepared statements
// kept for the life of their database.
//
// better-sqlite3 13 is built on Node-API 10 (Node 22.14+, 24, 26) and ships its binaries in the package. 12 wraps
// its objects in node::ObjectWrap, and on Node 24.19+ and 26 the garbage collector freeing one of them while no
// Node environment is current aborts the process (RemoveEnvironmentCleanupHook's "(env) != nullptr"). 13 does not
// load on Node 20 (Node-API 9), so there, and only there, the 12 build (the `better-sqlite3-node20` alias in
// package.json) is used. Both have the same API and the same file format.

import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteDatabase = BetterSqlite3.Database;
export type SqliteStatement = BetterSqlite3.Statement;

/** The package this process loads: 13 where Node-API 10 is there, the Node 20 build otherwise. */
export const SQLITE_PACKAGE = Number(process.versions.napi) >= 10 ? 'better-sqlite3' : 'better-sqlite3-node20';

export const Database = createRequire(import.meta.url)(SQLITE_PACKAGE) as typeof BetterSqlite3;

export type Prepare = (sql: string) => SqliteStatement;

/** One prepared statement per SQL text for the database's life: preparing once is cheaper. The SQL texts are the
 * stores' own, a handful each, plus the metrics query's few shapes; past `max` the oldest is let go. */
export function statementCache(db: SqliteDatabase, max = 512): Prepare {
  const statements = new Map<string, SqliteStatement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      if (statements.size >= max) statements.delete(statements.keys().next().value!);
      statements.set(sql, statement);
    }
    return statement;
  };
}
