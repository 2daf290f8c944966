// Worker thread that answers metrics queries from its own read-only connection to the store, so that a
// large answer (48 h of every series is ~90,000 rows, a few hundred ms to read and serialize) never
// blocks the server's event loop. It gets {id, file, identity, query} and posts back {id, json} or {id, error}.

import { parentPort } from 'node:worker_threads';
import type { InstanceIdentity } from './identity.js';
import { answerMetricsApp, type MetricsAppQuery } from './query.js';
import { MetricsStore } from './store.js';

export interface QueryJob {
  id: number;
  file: string;
  identity: InstanceIdentity;
  query: MetricsAppQuery;
}

export type QueryReply = { id: number; json: string } | { id: number; error: string };

const stores = new Map<string, MetricsStore>();

parentPort?.on('message', (job: QueryJob) => {
  let reply: QueryReply;
  try {
    let store = stores.get(job.file);
    if (!store) {
      store = MetricsStore.openReadOnly(job.file);
      stores.set(job.file, store);
    }
    reply = { id: job.id, json: JSON.stringify(answerMetricsApp(store, job.identity, job.query)) };
  } catch (e) {
    reply = { id: job.id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
