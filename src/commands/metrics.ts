// `edgecv metrics app --addr https://host:8008 --output-format json region=R app-org=O appname=A appvers=V
//  [selector=cpu,mem] [last=N] [starttime=...] [endtime=...] [numsamples=N]`: the metrics query, printed as JSON.

import path from 'node:path';
import { apiRequest, ClientError, normalizeAddr, type TlsChoice } from '../client/api-client.js';
import { TokenStore } from '../client/token-store.js';
import { ConfigError } from '../config.js';
import { parseCommandArgs, positiveIntKey, requiredFlag, requiredKey, stringFlag } from './args.js';

export const METRICS_USAGE = `usage: edgecv metrics app --addr https://host:8008 [--output-format json] [--cacert FILE | --insecure]
         region=R app-org=O appname=A appvers=V [selector=cpu|mem|disk|network|connections[,...]]
         [last=N] [starttime=RFC3339] [endtime=RFC3339] [numsamples=N]

Needs a login first: edgecv login --addr https://host:8008 username=U password=P`;

const KEYS = ['region', 'app-org', 'appname', 'appvers', 'selector', 'last', 'starttime', 'endtime', 'numsamples'] as const;

export async function runMetrics(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'app')
    throw new ConfigError(sub === undefined ? 'which metrics? only `metrics app` exists' : `unknown metrics kind '${sub}': only 'app'`);
  const p = parseCommandArgs(
    rest,
    { addr: { type: 'string' }, 'output-format': { type: 'string' }, cacert: { type: 'string' }, insecure: { type: 'boolean' } },
    KEYS,
  );
  const format = stringFlag(p, 'output-format') ?? 'json';
  if (format !== 'json') throw new ConfigError(`--output-format ${format} is not supported: use json`);
  const body: Record<string, unknown> = {
    region: requiredKey(p, 'region'),
    appinst: { app_key: { organization: requiredKey(p, 'app-org'), name: requiredKey(p, 'appname'), version: requiredKey(p, 'appvers') } },
  };
  for (const key of ['selector', 'starttime', 'endtime'] as const) if (p.keys.has(key)) body[key] = p.keys.get(key);
  for (const key of ['last', 'numsamples'] as const) {
    const n = positiveIntKey(p, key);
    if (n !== undefined) body[key] = n;
  }

  let addr = '';
  try {
    addr = normalizeAddr(requiredFlag(p, 'addr'));
    const store = new TokenStore();
    const saved = store.get(addr);
    if (!saved) throw new ClientError(`not logged in to ${addr}: run  edgecv login --addr ${addr} username=U password=P`);
    if (Date.parse(saved.expires) <= Date.now()) {
      throw new ClientError(`the login to ${addr} expired at ${saved.expires}: run  edgecv login --addr ${addr} username=U password=P  again`);
    }
    const cacert = stringFlag(p, 'cacert');
    const tls: TlsChoice =
      p.flags['insecure'] === true
        ? { insecure: true }
        : cacert !== undefined
          ? { cacert: path.resolve(cacert) }
          : { cacert: saved.cacert, insecure: saved.insecure };
    const answer = await apiRequest({ addr, method: 'POST', path: '/api/v1/auth/metrics/app', body, token: saved.token, tls });
    console.log(JSON.stringify(answer, null, 2));
    return 0;
  } catch (e) {
    if (!(e instanceof ClientError)) throw e;
    let message = e.message;
    if (e.status === 401) message += `\nthe server did not accept the saved login: run  edgecv login --addr ${addr} username=U password=P  again`;
    if (e.status === 403) message = `forbidden: ${message}`;
    console.error(`edgecv metrics app: ${message}`);
    return 1;
  }
}
