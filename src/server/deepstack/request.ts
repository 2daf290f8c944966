// Reading a DeepStack request: its form (multipart/form-data as every client sends it, urlencoded too, or a raw
// image body), the API key, and the numeric options, with DeepStack's own error messages.

import type { Context, MiddlewareHandler } from 'hono';
import type { ServerConfig } from '../../config.js';
import { keyMatcher, presentedKey, requireAdmin } from '../admin-auth.js';
import type { AppVariables } from '../app-env.js';
import { HttpError } from '../errors.js';
import { MULTIPART, URLENCODED, type FormReadOptions } from '../form-body.js';
import { formImage, mediaType, readFormParts, readImageInput, type FormFile } from '../image-input.js';
import { NO_IMAGE } from './reply.js';

export interface DeepStackRequest {
  fields: Map<string, string>;
  /** Every file part, in order (a raw image body is one part named `image`). */
  files: FormFile[];
}

/** The DeepStack routes' Hono env: the app's variables and the request read by openDeepStackRequest(). */
export type DeepStackEnv = { Variables: AppVariables & { deepstack: DeepStackRequest } };

/** Bytes in the body (read once: Hono keeps it for readImageInput). */
async function bodyLength(c: Context): Promise<number> {
  try {
    return (await c.req.arrayBuffer()).byteLength;
  } catch (e) {
    throw new HttpError(400, `could not read the request body: ${(e as Error).message}`);
  }
}

export async function readDeepStackRequest(c: Context, opts: FormReadOptions = {}): Promise<DeepStackRequest> {
  const parts = await readFormParts(c, opts);
  if (parts) {
    const files = parts.files.filter((f) => f.bytes.length > 0);
    // a base64 `image` field (urlencoded clients) counts as the image part
    if (!files.some((f) => f.name === 'image') && parts.fields.has('image')) files.unshift({ name: 'image', bytes: formImage(parts)! });
    return { fields: parts.fields, files };
  }
  // No Content-Type and no bytes (an empty POST to /face/list or /custom/list: DeepStack's list handlers read no
  // form) is an empty request; requestImage() answers "No valid image file found" where an image is needed.
  if (!c.req.header('content-type') && (!c.req.raw.body || (await bodyLength(c)) === 0)) return { fields: new Map(), files: [] };
  const { bytes } = await readImageInput(c); // a raw image body; 415 for any other Content-Type
  return { fields: new Map(), files: [{ name: 'image', bytes }] };
}

/** The `image` part of a request, or the first file part; 400 "No valid image file found" without one. */
export function requestImage(req: DeepStackRequest): Buffer {
  const file = req.files.find((f) => f.name === 'image') ?? req.files[0];
  if (!file) throw new HttpError(400, NO_IMAGE);
  return file.bytes;
}

const WRONG_KEY = 'Incorrect api key';

/**
 * The first middleware of every DeepStack route: checks the API key and reads the form (c.get('deepstack')).
 * With --api-key, the key comes as X-API-Key, Bearer, or the form field api_key (DeepStack's way); the admin
 * key passes too, so that one client that also trains (Double Take) needs only one key. Clients send
 * api_key="" on every call: that passes when no API key is configured.
 * The key is checked before the body is read: a header key at once; without one, only a form can
 * carry it, so any other body is refused unread, and a form is read only until its api_key field (a wrong one
 * is refused there), or until it goes over the form limits (refused as an unauthenticated request).
 */
export function openDeepStackRequest(apiKey: string | undefined, adminKey: string | undefined): MiddlewareHandler<DeepStackEnv> {
  if (!apiKey) {
    return async (c, next) => {
      c.set('deepstack', await readDeepStackRequest(c));
      await next();
    };
  }
  const isApiKey = keyMatcher(apiKey);
  const isAdminKey = adminKey ? keyMatcher(adminKey) : () => false;
  const passes = (key: string) => key !== '' && (isApiKey(key) || isAdminKey(key));
  return async (c, next) => {
    const header = presentedKey(c);
    if (header) {
      if (!passes(header)) throw new HttpError(401, WRONG_KEY);
      c.set('deepstack', await readDeepStackRequest(c));
    } else {
      const type = mediaType(c.req.header('content-type'));
      if (type !== MULTIPART && type !== URLENCODED) throw new HttpError(401, WRONG_KEY);
      let keyed = false;
      const req = await readDeepStackRequest(c, {
        onField: (name, value) => {
          if (name !== 'api_key' || keyed) return;
          if (!passes(value.trim())) throw new HttpError(401, WRONG_KEY);
          keyed = true;
        },
        overLimit: () => (keyed ? undefined : new HttpError(401, WRONG_KEY)),
      });
      if (!keyed) throw new HttpError(401, WRONG_KEY);
      c.set('deepstack', req);
    }
    await next();
  };
}

/**
 * The guard of /face/register and /face/delete. 'api' (the default, DeepStack's rule): with an API key
 * configured they open with what opens every DeepStack route (the API key, or the admin key), already checked by
 * openDeepStackRequest; without one, the admin rule holds (the admin key, or loopback). 'admin': always the admin
 * rule, for operators who keep enrolment behind the admin key.
 */
export function enrolmentGuard(config: Pick<ServerConfig, 'apiKey' | 'adminKey' | 'deepstackEnrolmentKey'>): MiddlewareHandler {
  if ((config.deepstackEnrolmentKey ?? 'api') === 'api' && config.apiKey) return async (_c, next) => next();
  return requireAdmin(config.adminKey, { formKey: formAdminKey });
}

/** The key a form carries for the admin check of register/delete: api_key, or DeepStack's admin_key. */
export function formAdminKey(c: Context<DeepStackEnv>): string | undefined {
  const req = c.get('deepstack');
  return req.fields.get('admin_key') || req.fields.get('api_key') || undefined;
}

/** min_confidence as DeepStack reads it: empty means the default, > 1 is refused, below 0 means 0. */
export function minConfidence(req: DeepStackRequest, fallback: number): number {
  const raw = req.fields.get('min_confidence')?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new HttpError(400, 'Invalid value for min_confidence');
  if (value > 1) throw new HttpError(400, 'min_confidence cannot be greater than 1');
  return Math.max(0, value);
}

/** The optional `limit` (most predictions), 1 to `max`. */
export function limitField(req: DeepStackRequest, fallback: number, max: number): number {
  const raw = req.fields.get('limit')?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) throw new HttpError(400, `Invalid value for limit: an integer from 1 to ${max}`);
  return Number(raw);
}

/** The `userid` field; 400 "userid not specified" without one. */
export function userId(req: DeepStackRequest): string {
  const id = req.fields.get('userid');
  if (id === undefined || id === '') throw new HttpError(400, 'userid not specified');
  return id;
}
