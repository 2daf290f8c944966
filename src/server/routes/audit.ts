// GET /api/v1/auth/audit[?tracid=<id>][&limit=N]: recent audit entries, newest first, for users of the
// instance's organization. {"success":"true","entries":[{time,tracid,method,route,path,status,durationMs,client,user}]}

import { Hono } from 'hono';
import type { AuditLog } from '../../audit/audit-log.js';
import type { InstanceIdentity } from '../../metrics/identity.js';
import type { AppEnv } from '../app-env.js';
import { requireOrg } from '../auth-guard.js';
import { HttpError } from '../errors.js';

const MAX_LIMIT = 1000;

/** Mounted at /api/v1/auth/audit, behind the auth guard. */
export function auditRoutes(deps: { audit: AuditLog; identity: InstanceIdentity }): Hono<AppEnv> {
  return new Hono<AppEnv>().get('/', (c) => {
    requireOrg(c.get('user'), deps.identity.appOrg);
    const tracid = c.req.query('tracid');
    if (tracid !== undefined && !/^[A-Za-z0-9-]{1,64}$/.test(tracid)) {
      throw new HttpError(400, 'tracid must be the trace id of a response (letters, digits and -)');
    }
    const limitText = c.req.query('limit') ?? '100';
    const limit = /^\d+$/.test(limitText) ? Number(limitText) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) throw new HttpError(400, `limit must be an integer from 1 to ${MAX_LIMIT}`);
    return c.json({ success: 'true', entries: deps.audit.recent({ tracid, limit }) });
  });
}
