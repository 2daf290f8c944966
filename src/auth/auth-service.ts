// Login and token checks for the server: users from the users file, tokens from TokenSigner, failed
// logins throttled by FailedLoginLimiter. Failures are AuthError with the HTTP status they stand for.

import { FailedLoginLimiter } from './login-limiter.js';
import { verifyNothing, verifyPassword } from './passwords.js';
import { loadOrCreateJwtKey, TokenError, TokenSigner } from './tokens.js';
import { UserDirectory } from './users.js';

export class AuthError extends Error {
  override name = 'AuthError';
  constructor(
    readonly status: 401 | 429,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export interface AuthenticatedUser {
  username: string;
  /** Organizations whose data the user may read. */
  orgs: string[];
}

export interface AuthServiceOptions {
  tokenTtlMs?: number;
  limiter?: FailedLoginLimiter;
}

export class AuthService {
  readonly #users: UserDirectory;
  readonly #signer: TokenSigner;
  readonly #limiter: FailedLoginLimiter;

  constructor(dataDir: string, opts: AuthServiceOptions = {}) {
    this.#users = new UserDirectory(dataDir);
    this.#signer = new TokenSigner(loadOrCreateJwtKey(dataDir), opts.tokenTtlMs);
    this.#limiter = opts.limiter ?? new FailedLoginLimiter();
  }

  /** A token for a right username/password; AuthError 401 when wrong, 429 while throttled. */
  async login(username: string, password: string, address: string): Promise<{ token: string; exp: number }> {
    // Counted before the (slow) password check, so tries sent at once cannot all pass the limit.
    const { attempt, retryAfterSeconds } = this.#limiter.admit(address, username);
    if (!attempt) throw new AuthError(429, `too many failed logins: try again in ${retryAfterSeconds} s`, retryAfterSeconds);
    const user = this.#users.get(username);
    const ok = user ? await verifyPassword(password, user.passwordHash) : await verifyNothing(password);
    if (!ok) throw new AuthError(401, 'wrong username or password');
    attempt.succeeded();
    return this.#signer.sign(username);
  }

  /** The user an `Authorization: Bearer <token>` header stands for; AuthError 401 otherwise. */
  async authenticate(authorization: string | undefined): Promise<AuthenticatedUser> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new AuthError(401, 'login required: send Authorization: Bearer <token> (POST /api/v1/login gives one)');
    let username: string;
    try {
      ({ username } = await this.#signer.verify(m[1]!));
    } catch (e) {
      if (e instanceof TokenError) throw new AuthError(401, e.message);
      throw e;
    }
    const user = this.#users.get(username);
    if (!user) throw new AuthError(401, `user '${username}' no longer exists: log in again`);
    return { username, orgs: [...user.orgs] };
  }
}
