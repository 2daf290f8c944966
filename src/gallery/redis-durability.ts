// Whether the fleet's Redis keeps what it acknowledged across its own restart, for the start-up warning and the
// capabilities answer (StoreDurability).

import type { Redis } from 'ioredis';
import type { StoreDurability } from './types.js';

/** Rows of CONFIG GET as a map (Redis answers [name, value, name, value, ...]). */
function configMap(reply: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), String(reply[i + 1]));
  return out;
}

/**
 * Whether Redis keeps what it acknowledged across its own restart: CONFIG GET save / appendonly, or, where CONFIG
 * is refused (renamed, ACL, managed Redis), INFO persistence's aof_enabled. Never throws.
 */
export async function redisDurability(client: Redis, url: string): Promise<StoreDurability> {
  const where = redactedUrl(url);
  let rdb: boolean | null = null;
  let aof: boolean | null = null;
  let fsync: string | null = null;
  try {
    const config = configMap(await client.config('GET', 'save'));
    for (const [k, v] of configMap(await client.config('GET', 'appendonly'))) config.set(k, v);
    for (const [k, v] of configMap(await client.config('GET', 'appendfsync'))) config.set(k, v);
    if (config.has('save')) rdb = config.get('save')!.trim() !== '';
    if (config.has('appendonly')) aof = config.get('appendonly') === 'yes';
    fsync = config.get('appendfsync') ?? null;
  } catch {
    // refused: INFO below
  }
  if (aof === null) {
    try {
      const info = await client.info('persistence');
      const m = /^aof_enabled:(\d)/m.exec(info);
      if (m) aof = m[1] === '1';
    } catch {
      // refused too: unknown
    }
  }
  const persistence: StoreDurability['persistence'] =
    aof === true ? (rdb === true ? 'aof+rdb' : 'aof') : rdb === true ? 'rdb' : aof === false && rdb === false ? 'none' : 'unknown';
  let warning: string | null = null;
  if (persistence === 'none') {
    warning = `the gallery's Redis (${where}) does not persist (save '' and appendonly no): every enrolment is lost when Redis restarts. Turn on AOF (appendonly yes).`;
  } else if (persistence === 'unknown') {
    warning = `cannot tell whether the gallery's Redis (${where}) persists (CONFIG refused, INFO silent): without AOF or RDB every enrolment is lost when Redis restarts.`;
  } else if (persistence === 'rdb') {
    warning = `the gallery's Redis (${where}) persists by RDB snapshots only: enrolments since the last snapshot are lost if Redis stops abruptly. AOF (appendonly yes) keeps them.`;
  } else if (fsync === 'no') {
    warning = `the gallery's Redis (${where}) writes its AOF without fsync (appendfsync no): a power cut can lose recent enrolments.`;
  }
  return { kind: 'redis', persistence, warning };
}

/** The URL without its password, for logs. */
function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'redis';
  }
}
