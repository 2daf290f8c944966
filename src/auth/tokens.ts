// Login tokens: HS256 JWTs (jose) signed with a random key kept in <data-dir>/auth/jwt.key (mode 0600),
// created on first use. Deleting the key file logs everyone out at the next start.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errors, jwtVerify, SignJWT } from 'jose';
import { AUTH_DIR } from './users.js';

export const JWT_KEY_FILE = 'jwt.key';
export const DEFAULT_TOKEN_TTL_MS = 24 * 3600 * 1000;
const ISSUER = 'edgecv';
const KEY_BYTES = 32;

export class TokenError extends Error {
  override name = 'TokenError';
  constructor(
    readonly reason: 'expired' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

export function jwtKeyFile(dataDir: string): string {
  return path.join(dataDir, AUTH_DIR, JWT_KEY_FILE);
}

/** The signing key: read from the data folder, or created there (0600) when missing. */
export function loadOrCreateJwtKey(dataDir: string): Uint8Array {
  const file = jwtKeyFile(dataDir);
  try {
    const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64url');
    if (key.length >= KEY_BYTES) return key;
    throw new Error(`${file} holds a key shorter than ${KEY_BYTES} bytes`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = randomBytes(KEY_BYTES);
  try {
    fs.writeFileSync(file, `${key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    // Another process created it between our read and write: use theirs.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateJwtKey(dataDir);
    throw e;
  }
  return key;
}

export interface TokenClaims {
  username: string;
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export class TokenSigner {
  constructor(
    readonly key: Uint8Array,
    readonly ttlMs: number = DEFAULT_TOKEN_TTL_MS,
  ) {}

  async sign(username: string, now = Date.now()): Promise<{ token: string; exp: number }> {
    const exp = Math.floor((now + this.ttlMs) / 1000);
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(username)
      .setIssuer(ISSUER)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, exp };
  }

  /** The claims of a valid token; throws TokenError('expired' | 'invalid') otherwise. */
  async verify(token: string): Promise<TokenClaims> {
    try {
      const { payload } = await jwtVerify(token, this.key, { issuer: ISSUER, algorithms: ['HS256'], requiredClaims: ['sub', 'exp'] });
      return { username: payload.sub!, exp: payload.exp! };
    } catch (e) {
      if (e instanceof errors.JWTExpired) throw new TokenError('expired', 'the token has expired: log in again');
      throw new TokenError('invalid', 'the token is not valid for this server: log in again');
    }
  }
}
