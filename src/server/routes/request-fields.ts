// The text fields of a /trainer request that carries no image (remove, move, train): query string, then the body
// (urlencoded, multipart or JSON) wins.
//
// A field the route takes must come as one text value: JSON null, true, an array or an object, a multipart file
// part, a name given twice, or PHP's `id[]=4` form is a 400 naming the field. Dropping such a value instead made
// it "absent", and an absent id on /trainer/remove/ means the whole subject: one malformed id deleted every
// sample of a subject. Fields the route does not take (the original app's owner_name, owner_id) are ignored.

import type { Context } from 'hono';
import { HttpError } from '../errors.js';
import { mediaType, readFormParts, type FormParts } from '../image-input.js';

function notOneValue(name: string, how: string): HttpError {
  return new HttpError(400, `'${name}' must be one text value; it came ${how}`);
}

/** `id[]`, `id[0]`, `id[x]`: a name with brackets after one the route takes. */
function bracketed(key: string, names: readonly string[]): string | undefined {
  const m = /^([^[\]]+)\[[^\]]*\]/.exec(key);
  return m && names.includes(m[1]!) ? m[1] : undefined;
}

function checkKeys(keys: Iterable<string>, names: readonly string[]): void {
  for (const key of keys) {
    const name = bracketed(key, names);
    if (name !== undefined) throw notOneValue(name, `as '${key}' (a list or map form); send '${name}' once`);
  }
}

/** Throws HttpError 400 when one of `names` comes in `form` as a file part, more than once, or in a list form. */
export function checkFormFields(form: FormParts, names: readonly string[]): void {
  checkKeys([...form.fields.keys(), ...form.files.map((f) => f.name)], names);
  for (const name of names) {
    if (form.files.some((f) => f.name === name)) throw notOneValue(name, 'as a file part; send it as a text field');
    if (form.repeated.has(name)) throw notOneValue(name, 'more than once in the form');
  }
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * The fields `names` of a request without an image: query string, then the body (urlencoded, multipart or JSON)
 * wins. Throws HttpError 400 when one of `names` comes in a shape other than one string (or JSON number).
 */
export async function readFields(c: Context, names: readonly string[]): Promise<Map<string, string>> {
  const fields = new Map<string, string>();
  const query = c.req.queries();
  checkKeys(Object.keys(query), names);
  for (const name of names) {
    const values = query[name];
    if (values === undefined) continue;
    if (values.length > 1) throw notOneValue(name, `${values.length} times in the query string`);
    fields.set(name, values[0]!);
  }
  const type = mediaType(c.req.header('content-type'));
  if (type === 'application/x-www-form-urlencoded' || type === 'multipart/form-data') {
    // streamed and bounded (form-body.ts): a form of many parts is refused, not parsed whole
    let form;
    try {
      form = (await readFormParts(c))!;
    } catch (e) {
      throw e instanceof HttpError ? e : new HttpError(400, `malformed request body: ${(e as Error).message}`);
    }
    checkFormFields(form, names);
    for (const name of names) {
      const value = form.fields.get(name);
      if (value !== undefined) fields.set(name, value);
    }
    return fields;
  }
  if (type === 'application/json') {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch (e) {
      throw new HttpError(400, `malformed request body: ${(e as Error).message}`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new HttpError(400, 'malformed request body: the JSON body must be an object');
    checkKeys(Object.keys(body), names);
    for (const name of names) {
      if (!Object.hasOwn(body, name)) continue;
      const v = (body as Record<string, unknown>)[name];
      if (typeof v !== 'string' && typeof v !== 'number') throw notOneValue(name, `as ${jsonType(v)}; send a string or a number`);
      fields.set(name, String(v));
    }
    return fields;
  }
  if (type !== '') throw new HttpError(415, `unsupported Content-Type '${type}'; send ${names.join(', ')} as form fields, JSON or query parameters`);
  return fields;
}
