// `edgecv user add|remove|list --data-dir DIR ...`: manages the users file the server logs users in from.

import path from 'node:path';
import { parseArgs } from 'node:util';
import { addUser, readUsers, removeUser, UserError, usersFile } from '../auth/users.js';
import { ConfigError } from '../config.js';

export const USER_USAGE = `usage:
  edgecv user add    --data-dir DIR --username U --password P --org ORG [--org ORG2 ...]
  edgecv user remove --data-dir DIR --username U
  edgecv user list   --data-dir DIR

--data-dir defaults to $EDGECV_DATA_DIR, else ./data (the server's data folder).
--org: an organization whose metrics the user may read (an instance's --app-org).`;

export async function runUserCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        'data-dir': { type: 'string' },
        username: { type: 'string' },
        password: { type: 'string' },
        org: { type: 'string', multiple: true },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  const dataDir = path.resolve(values['data-dir'] ?? (process.env['EDGECV_DATA_DIR'] || 'data'));
  const need = (name: 'username' | 'password') => {
    const v = values[name];
    if (v === undefined || v === '') throw new ConfigError(`--${name} is required`);
    return v;
  };
  try {
    switch (sub) {
      case 'add': {
        const user = await addUser(dataDir, need('username'), need('password'), values.org ?? []);
        console.log(`added user '${user.username}' (organizations: ${user.orgs.join(', ')}) to ${usersFile(dataDir)}`);
        return 0;
      }
      case 'remove':
        removeUser(dataDir, need('username'));
        console.log(`removed user '${values.username}' from ${usersFile(dataDir)}`);
        return 0;
      case 'list':
        for (const u of readUsers(dataDir)) console.log(`${u.username}\t${u.orgs.join(',')}`);
        return 0;
      default:
        throw new ConfigError(sub === undefined ? 'which one: add, remove or list?' : `unknown subcommand '${sub}'`);
    }
  } catch (e) {
    if (e instanceof UserError) {
      console.error(`edgecv user ${sub}: ${e.message}`);
      return 1;
    }
    throw e;
  }
}
