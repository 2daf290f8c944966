// The users file, <data-dir>/auth/users.json (mode 0600): who may log in, their password hashes, and the
// organizations whose metrics each may read. `edgecv user add|remove|list` edits it; the server rereads
// it when it changes, so a removed user loses access at once, without a restart.

import fs from 'node:fs';
import path from 'node:path';
import { hashPassword } from './passwords.js';

export const AUTH_DIR = 'auth';
export const USERS_FILE = 'users.json';

export interface UserRecord {
  username: string;
  passwordHash: string;
  orgs: string[];
  created: string;
}

interface UsersFile {
  users: UserRecord[];
}

export class UserError extends Error {
  override name = 'UserError';
}

export const MAX_USERNAME_LENGTH = 64;
const USERNAME = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,${MAX_USERNAME_LENGTH - 1}}$`);
export const MIN_PASSWORD_LENGTH = 8;
/** Longest password: scrypt hashes any length, but a login must not make it hash megabytes. */
export const MAX_PASSWORD_LENGTH = 1024;

export function usersFile(dataDir: string): string {
  return path.join(dataDir, AUTH_DIR, USERS_FILE);
}

export function checkUsername(username: string): void {
  if (!USERNAME.test(username)) {
    throw new UserError(
      `invalid username ${JSON.stringify(username)}: 1-${MAX_USERNAME_LENGTH} letters, digits, '.', '_', '@' or '-', starting with a letter or digit`,
    );
  }
}

function checkOrg(org: string): void {
  if (org.trim() === '' || org.length > 128 || /[\u0000-\u001f\u007f]/.test(org)) {
    throw new UserError(`invalid organization ${JSON.stringify(org)}: 1-128 printable characters`);
  }
}

function isUserRecord(v: unknown): v is UserRecord {
  const u = v as Partial<UserRecord> | null;
  return (
    typeof u === 'object' &&
    u !== null &&
    typeof u.username === 'string' &&
    typeof u.passwordHash === 'string' &&
    Array.isArray(u.orgs) &&
    u.orgs.every((o) => typeof o === 'string')
  );
}

/** Reads the users file; a missing file is no users. Throws UserError when it is unreadable or malformed. */
export function readUsers(dataDir: string): UserRecord[] {
  const file = usersFile(dataDir);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new UserError(`cannot read ${file}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new UserError(`${file} is not JSON: ${(e as Error).message}`);
  }
  const users = (parsed as Partial<UsersFile> | null)?.users;
  if (!Array.isArray(users) || !users.every(isUserRecord)) throw new UserError(`${file} is malformed: expected {"users":[...]}`);
  return users;
}

function writeUsers(dataDir: string, users: UserRecord[]): void {
  const file = usersFile(dataDir);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const body: UsersFile = { users };
  fs.writeFileSync(tmp, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file); // atomic: the server never reads half a file
}

export async function addUser(dataDir: string, username: string, password: string, orgs: string[]): Promise<UserRecord> {
  checkUsername(username);
  if (password.length < MIN_PASSWORD_LENGTH) throw new UserError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new UserError(`the password must have at most ${MAX_PASSWORD_LENGTH} characters`);
  if (orgs.length === 0) throw new UserError('give at least one --org: the organizations whose metrics the user may read');
  orgs.forEach(checkOrg);
  const users = readUsers(dataDir);
  if (users.some((u) => u.username === username)) throw new UserError(`user '${username}' already exists (remove it first to change it)`);
  const record: UserRecord = { username, passwordHash: await hashPassword(password), orgs: [...new Set(orgs)], created: new Date().toISOString() };
  writeUsers(dataDir, [...users, record]);
  return record;
}

export function removeUser(dataDir: string, username: string): void {
  const users = readUsers(dataDir);
  if (!users.some((u) => u.username === username)) throw new UserError(`no user '${username}' in ${usersFile(dataDir)}`);
  writeUsers(
    dataDir,
    users.filter((u) => u.username !== username),
  );
}

/** The users file as the server sees it: reread only when its size or mtime changed. */
export class UserDirectory {
  #stamp = '';
  #users = new Map<string, UserRecord>();
  constructor(readonly dataDir: string) {}

  get(username: string): UserRecord | undefined {
    this.#refresh();
    return this.#users.get(username);
  }

  #refresh(): void {
    let stamp: string;
    try {
      const st = fs.statSync(usersFile(this.dataDir));
      stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
    } catch {
      stamp = 'missing';
    }
    if (stamp === this.#stamp) return;
    try {
      this.#users = new Map(readUsers(this.dataDir).map((u) => [u.username, u]));
    } catch (e) {
      // A broken file locks everyone out rather than letting anyone in; say why on the server's console.
      console.error(`[edgecv] ${(e as Error).message}`);
      this.#users = new Map();
    }
    this.#stamp = stamp;
  }
}
