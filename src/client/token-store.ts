// Where `edgecv login` keeps its tokens: one JSON file (mode 0600), keyed by server address, so later
// commands reuse the token and the TLS choice (--cacert / --insecure) made at login.
//   $EDGECV_TOKEN_FILE, else $XDG_CONFIG_HOME/edgecv/token.json, else ~/.config/edgecv/token.json

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface SavedLogin {
  token: string;
  username: string;
  /** ISO time the token expires. */
  expires: string;
  /** Absolute path of the CA/certificate file trusted at login. */
  cacert?: string;
  /** Certificate verification was skipped at login. */
  insecure?: boolean;
}

interface TokenFile {
  servers: Record<string, SavedLogin>;
}

export function tokenFilePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env['EDGECV_TOKEN_FILE']) return path.resolve(env['EDGECV_TOKEN_FILE']);
  const config = env['XDG_CONFIG_HOME'] || path.join(os.homedir(), '.config');
  return path.join(config, 'edgecv', 'token.json');
}

function read(file: string): TokenFile {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<TokenFile> | null;
    if (parsed && typeof parsed.servers === 'object' && parsed.servers !== null) return { servers: parsed.servers };
  } catch {
    /* missing or unreadable: no logins */
  }
  return { servers: {} };
}

function write(file: string, content: TokenFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  fs.chmodSync(tmp, 0o600); // the umask may have cut the mode of a file that already existed
  fs.renameSync(tmp, file);
}

export class TokenStore {
  constructor(readonly file: string = tokenFilePath()) {}

  get(addr: string): SavedLogin | undefined {
    return read(this.file).servers[addr];
  }

  save(addr: string, login: SavedLogin): void {
    const content = read(this.file);
    content.servers[addr] = login;
    write(this.file, content);
  }

  /** True when there was a login to forget. */
  remove(addr: string): boolean {
    const content = read(this.file);
    if (!(addr in content.servers)) return false;
    delete content.servers[addr];
    write(this.file, content);
    return true;
  }
}
