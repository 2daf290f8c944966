// Error responses: every failure answers {"success":"false","error":"..."} with a fitting status.

import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { EngineErrorCode } from '../engine/errors.js';
import { engineErrorCode } from './engine-types.js';

export interface ErrorBody {
  success: 'false';
  error: string;
}

/**
 * An error answered with `status`, {"success":"false","error": message} and `headers`. A Hono HTTPException, so that
 * Hono and its middleware see one mechanism; the apps' error handlers (error-handler.ts) write its answer.
 */
export class HttpError extends HTTPException {
  override name = 'HttpError';
  constructor(
    status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(status, { message });
  }

  /** The same answer where no edgecv error handler runs (Hono's default handler asks the exception for it). */
  override getResponse(): Response {
    return Response.json(errorBody(this.message), { status: this.status, headers: this.headers });
  }
}

export function errorBody(message: string): ErrorBody {
  return { success: 'false', error: message };
}

export function errorResponse(c: Context, status: ContentfulStatusCode, message: string, headers?: Record<string, string>) {
  return c.json(errorBody(message), status, headers);
}

const ENGINE_STATUS: Record<EngineErrorCode, { status: ContentfulStatusCode; headers?: Record<string, string>; message?: string }> = {
  INVALID_IMAGE: { status: 400 },
  INVALID_ARGUMENT: { status: 400 },
  // an image of a format the engine does not decode is still "not an image we can use": 400, like garbage
  UNSUPPORTED_FORMAT: { status: 400 },
  IMAGE_TOO_LARGE: { status: 413 },
  OVERLOADED: { status: 503, headers: { 'Retry-After': '1' }, message: 'server busy: too many images queued, retry later' },
  CLOSED: { status: 503, headers: { 'Retry-After': '1' }, message: 'server is shutting down' },
  INTERNAL: { status: 500, message: 'internal error while processing the image' },
};

/** Maps any thrown value to an HttpError (status, client-facing message, headers). */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const code = engineErrorCode(err);
  if (code) {
    const m = ENGINE_STATUS[code];
    return new HttpError(m.status, m.message ?? (err as Error).message, m.headers);
  }
  if (err instanceof HTTPException) {
    return new HttpError(err.status as ContentfulStatusCode, err.message || 'request error');
  }
  return new HttpError(500, 'internal server error');
}
