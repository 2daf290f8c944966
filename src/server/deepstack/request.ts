// Reading a DeepStack request: its form (multipart/form-data as every client sends it, urlencoded too, or a raw
// image body), the API key, and the numeric options, with DeepStack's own error messages.

import type { Context, MiddlewareHandler } from 'hono';
import { keyMatcher, presentedKey } from '../admin-auth.js';
import { HttpError } from '../errors.js';
import { formImage, readFormParts, readImageInput, type FormFile } from '../image-input.js';
import { NO_IMAGE } from './reply.js';

export interface DeepStackRequest {
  fields: Map<string, string>;
  /** Every file part, in order (a raw image body is one part named `image`). */
  files: FormFile[];
}

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by openDeepStackRequest(), the first middleware of every DeepStack route. */
    deepstack: DeepStackRequest;
  }
}

/** Bytes in the body (read once: Hono keeps it for readImageInput). */
async function bodyLength(c: Context): Promise<number> {
  try {
    return (await c.req.arrayBuffer()).byteLength;
  } catch (e) {
    throw new HttpError(400, `could not read the request body: ${(e as Error).message}`);
  }
}

export async function readDeepStackRequest(c: Context): Promise<DeepStackRequest> {
  const parts = await readFormParts(c);
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

/**
 * The guard of every DeepStack route when --api-key is set: the key comes as the form field api_key (DeepStack's
 * way), X-API-Key or Bearer. The admin key passes too, so that one client that also trains (Double Take) needs
 * only one key. Clients send api_key="" on every call: that passes when no API key is configured.
 */
function apiKeyGuard(apiKey: string | undefined, adminKey: string | undefined): (c: Context, req: DeepStackRequest) => void {
  if (!apiKey) return () => {};
  const isApiKey = keyMatcher(apiKey);
  const isAdminKey = adminKey ? keyMatcher(adminKey) : () => false;
  return (c, req) => {
    const key = presentedKey(c) || req.fields.get('api_key')?.trim() || '';
    if (key === '' || !(isApiKey(key) || isAdminKey(key))) throw new HttpError(401, 'Incorrect api key');
  };
}

/** The first middleware of every DeepStack route: reads the form (c.get('deepstack')) and checks the API key. */
export function openDeepStackRequest(apiKey: string | undefined, adminKey: string | undefined): MiddlewareHandler {
  const guard = apiKeyGuard(apiKey, adminKey);
  return async (c, next) => {
    const req = await readDeepStackRequest(c);
    guard(c, req);
    c.set('deepstack', req);
    await next();
  };
}

/** The key a form carries for the admin check of register/delete: api_key, or DeepStack's admin_key. */
export function formAdminKey(c: Context): string | undefined {
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
