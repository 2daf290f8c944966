// The context variables of the server's Hono apps, typed per app: createApp() and the route modules that set or
// read one are Hono<AppEnv> (DeepStack's routes add their request, deepstack/request.ts), so no other Hono app
// in the process sees them.

import type { AuthenticatedUser } from '../auth/auth-service.js';

export interface AppVariables {
  /** The request's trace id, set by the app's first middleware (request-trace.ts). */
  tracid: string;
  /** Set by the auth guard (and by a successful login). */
  user: AuthenticatedUser;
}

export type AppEnv = { Variables: AppVariables };
