// Reading a JSON request body for the API routes: 415 for another media type, 400 for malformed JSON.

import type { Context } from 'hono';
import { HttpError } from './errors.js';
import { mediaType } from './image-input.js';

export async function readJsonBody(c: Context): Promise<unknown> {
  const type = mediaType(c.req.header('content-type'));
  if (type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
    throw new HttpError(415, `unsupported Content-Type '${type}': send a JSON body (application/json)`);
  }
  let text: string;
  try {
    text = await c.req.text();
  } catch (e) {
    throw new HttpError(400, `could not read the request body: ${(e as Error).message}`);
  }
  if (text.trim() === '') throw new HttpError(400, 'the request has no body: send a JSON object');
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new HttpError(400, `the body is not valid JSON: ${(e as Error).message}`);
  }
}
