// Prepared statements kept for the life of their database, one per SQL text. Preparing once is cheaper, and it
// keeps better-sqlite3 12's Statement objects out of the garbage collector: on Node 24.19+ and 26 a Statement
// collected while no Node environment is current aborts the process (RemoveEnvironmentCleanupHook's
// "(env) != nullptr"; better-sqlite3 13 fixes it but does not load on Node 20). The cache is bounded: SQL texts
// are the stores' own, a handful each, plus the metrics query's few shapes.

import type Database from 'better-sqlite3';

export type Prepare = (sql: string) => Database.Statement;

export function statementCache(db: Database.Database, max = 512): Prepare {
  const statements = new Map<string, Database.Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      // Past the bound the oldest is let go (and collected); the stores' own SQL never comes near it.
      if (statements.size >= max) statements.delete(statements.keys().next().value!);
      statements.set(sql, statement);
    }
    return statement;
  };
}
