// Getting the image out of a request. Every image route (detection, recognition, pose, objects, enrolment)
// accepts the same four inputs and answers the same errors:
//   1. raw body, Content-Type image/png
//   2. raw body, Content-Type image/jpeg or image/jpg
//   3. multipart/form-data with a file part named `image` (a base64 text part is accepted too)
//   4. application/x-www-form-urlencoded with a base64 `image` parameter; `+` turned into spaces by a
//      client that did not URL-encode is repaired, and a `data:...;base64,` prefix is dropped
// The bytes decide PNG vs JPEG, not the header: the engine sniffs them, so a PNG sent as image/jpeg works.

import type { Context } from 'hono';
import { Base64Error, decodeBase64 } from '../base64.js';
import { HttpError } from './errors.js';
import { readFormParts as readForm, type FormParts, type FormReadOptions } from './form-body.js';

export type { FormFile, FormParts } from './form-body.js';

export const IMAGE_FIELD = 'image';

const RAW_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/pjpeg', 'application/octet-stream']);

const HOW_TO_SEND =
  `send it as the request body (Content-Type image/jpeg or image/png), as a multipart/form-data file part ` +
  `named '${IMAGE_FIELD}', or as a base64 '${IMAGE_FIELD}' parameter (application/x-www-form-urlencoded)`;

export interface ImageInput {
  bytes: Buffer;
  /** Other form fields (multipart text parts, urlencoded parameters) for routes that take options. */
  fields: Map<string, string>;
  /** The form it came in (null: a raw body), for a route that checks its fields' shapes (request-fields.ts). */
  form: FormParts | null;
}

function missing(detail: string): HttpError {
  return new HttpError(400, `missing image: ${detail}; ${HOW_TO_SEND}`);
}

/** The media type of a Content-Type header, lower-case, without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

async function readBody(c: Context): Promise<Buffer> {
  try {
    return Buffer.from(await c.req.arrayBuffer());
  } catch (e) {
    throw new HttpError(400, `could not read the request body: ${(e as Error).message}`);
  }
}

/** decodeBase64 (src/base64.ts) answering as the image routes do: 400, an empty text as a missing image. */
export function decodeBase64Image(text: string, where: string): Buffer {
  try {
    return decodeBase64(text, where);
  } catch (e) {
    if (!(e instanceof Base64Error)) throw e;
    throw e.empty ? missing(e.message) : new HttpError(400, e.message);
  }
}

/** The fields and files of a multipart/form-data or urlencoded body (bounded: form-body.ts); null for any other type. */
export function readFormParts(c: Context, opts: FormReadOptions = {}): Promise<FormParts | null> {
  return readForm(c, mediaType(c.req.header('content-type')), opts);
}

/**
 * The image of a form: its first file part named `image`, else a base64 `image` text field; undefined when it
 * has neither. Throws HttpError 400 for an empty part or bad base64.
 */
export function formImage(parts: FormParts): Buffer | undefined {
  const file = parts.files.find((f) => f.name === IMAGE_FIELD);
  if (file) {
    if (file.bytes.length === 0) throw missing(`the '${IMAGE_FIELD}' part is empty`);
    return file.bytes;
  }
  const text = parts.fields.get(IMAGE_FIELD);
  if (text === undefined) return undefined;
  return decodeBase64Image(text, parts.via === 'multipart' ? `form field '${IMAGE_FIELD}'` : `parameter '${IMAGE_FIELD}'`);
}

/**
 * Extracts the image bytes from a request in any of the four accepted forms.
 * Throws HttpError: 400 missing/empty/malformed, 415 unsupported Content-Type.
 * The body size limit is enforced before this, by the app's body-limit middleware.
 */
export async function readImageInput(c: Context): Promise<ImageInput> {
  const header = c.req.header('content-type');
  const type = mediaType(header);

  if (RAW_TYPES.has(type)) {
    const bytes = await readBody(c);
    if (bytes.length === 0) throw missing('the request body is empty');
    return { bytes, fields: new Map(), form: null };
  }
  const parts = await readFormParts(c);
  if (parts) {
    const bytes = formImage(parts);
    if (!bytes) throw missing(parts.via === 'multipart' ? `the form has no '${IMAGE_FIELD}' part` : `no '${IMAGE_FIELD}' parameter in the form`);
    const fields = new Map(parts.fields);
    fields.delete(IMAGE_FIELD);
    return { bytes, fields, form: parts };
  }

  if (type === '') {
    const bytes = c.req.raw.body ? await readBody(c) : Buffer.alloc(0);
    if (bytes.length === 0) throw missing('the request has no body');
    throw new HttpError(415, `the request has no Content-Type; ${HOW_TO_SEND}`);
  }
  throw new HttpError(415, `unsupported Content-Type '${type}'; ${HOW_TO_SEND}`);
}
