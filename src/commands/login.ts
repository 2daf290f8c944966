// `edgecv login --addr https://host:8008 username=U password=P` and `edgecv logout --addr ...`.

import path from 'node:path';
import { decodeJwt } from 'jose';
import { apiRequest, ClientError, normalizeAddr } from '../client/api-client.js';
import { TokenStore } from '../client/token-store.js';
import { ConfigError } from '../config.js';
import { parseCommandArgs, requiredFlag, requiredKey, stringFlag } from './args.js';

export const LOGIN_USAGE = `usage: edgecv login --addr https://host:8008 [--cacert FILE | --insecure] username=U [password=P]

Logs in and saves the token (file mode 0600) for later commands against the same --addr:
$EDGECV_TOKEN_FILE, else $XDG_CONFIG_HOME/edgecv/token.json, else ~/.config/edgecv/token.json.
  --cacert FILE  trust this certificate (e.g. the server's self-signed <data-dir>/tls/cert.pem)
  --insecure     do not verify the server's certificate at all
The TLS choice is saved with the token and reused by later commands. Without password=..., the password
is read from the first line of stdin (so that it does not show in the process list).`;

export const LOGOUT_USAGE = 'usage: edgecv logout --addr https://host:8008\n\nForgets the saved token for that server.';

const TLS_FLAGS = { addr: { type: 'string' }, cacert: { type: 'string' }, insecure: { type: 'boolean' } } as const;

export async function runLogin(args: string[]): Promise<number> {
  const p = parseCommandArgs(args, TLS_FLAGS, ['username', 'password']);
  const username = requiredKey(p, 'username');
  // password=... on the command line is visible to other local users (ps); piping it on stdin is not
  const password = p.keys.get('password') ?? (process.stdin.isTTY ? '' : await firstLineOfStdin());
  if (password === '') throw new ConfigError('password=... is required (or pipe the password on stdin)');
  const cacertFlag = stringFlag(p, 'cacert');
  const cacert = cacertFlag === undefined ? undefined : path.resolve(cacertFlag);
  const insecure = p.flags['insecure'] === true;
  const store = new TokenStore();
  let addr = '';
  try {
    addr = normalizeAddr(requiredFlag(p, 'addr'));
    const answer = (await apiRequest({ addr, method: 'POST', path: '/api/v1/login', body: { username, password }, tls: { cacert, insecure } })) as {
      token?: unknown;
    };
    if (typeof answer.token !== 'string') throw new ClientError(`${addr} answered without a token: is it an edgecv server?`);
    const exp = decodeJwt(answer.token).exp;
    const expires = new Date((exp ?? 0) * 1000).toISOString();
    store.save(addr, { token: answer.token, username, expires, ...(cacert ? { cacert } : {}), ...(insecure ? { insecure } : {}) });
    console.log(`logged in to ${addr} as ${username}; the token is valid until ${expires} and saved in ${store.file}`);
    return 0;
  } catch (e) {
    if (!(e instanceof ClientError)) throw e;
    const hint = e.status === 401 ? ' (check the username and password)' : '';
    console.error(`edgecv login: ${e.message}${hint}`);
    return 1;
  }
}

async function firstLineOfStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/, 1)[0] ?? '';
}

export async function runLogout(args: string[]): Promise<number> {
  const p = parseCommandArgs(args, { addr: { type: 'string' } }, []);
  try {
    const addr = normalizeAddr(requiredFlag(p, 'addr'));
    const store = new TokenStore();
    console.log(store.remove(addr) ? `logged out of ${addr}` : `not logged in to ${addr}`);
    return 0;
  } catch (e) {
    if (!(e instanceof ClientError)) throw e;
    console.error(`edgecv logout: ${e.message}`);
    return 1;
  }
}
