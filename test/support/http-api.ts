// Request helpers shared by the HTTP route tests: the four ways of sending an image, the error cases every
// image route answers alike, and the checks of the JSON error shape.
import { expect } from 'vitest';
import { garbage, photo, pngClaiming } from '../helpers.js';

export const TIME_RE = /^\d+\.\d{3}$/;

/** The parsed JSON body, after checking that the answer says it is JSON. */
export async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as T;
}

/** `{"success":"false","error":"..."}`, plus `extra` keys where a route adds some (e.g. gpu_support). */
export function expectError(body: unknown, re?: RegExp, extra: string[] = []): void {
  expect(Object.keys(body as object)).toEqual(['success', 'error', ...extra]);
  const b = body as { success: unknown; error: unknown };
  expect(b.success).toBe('false');
  expect(typeof b.error).toBe('string');
  if (re) expect(b.error).toMatch(re);
}

function multipart(bytes: Buffer): FormData {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type: 'application/octet-stream' }), 'image');
  return form;
}

/** The same image sent in each accepted form: raw, multipart file part, urlencoded base64 (escaped or not). */
export function imageForms(bytes: Buffer, rawType: string): [string, () => RequestInit][] {
  const b64 = bytes.toString('base64');
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  return [
    [`raw ${rawType}`, () => ({ method: 'POST', body: bytes, headers: { 'content-type': rawType } })],
    ['multipart/form-data file part', () => ({ method: 'POST', body: multipart(bytes) })],
    ['urlencoded base64', () => ({ method: 'POST', body: `image=${encodeURIComponent(b64)}`, headers: form })],
    ['urlencoded base64, + sent as is', () => ({ method: 'POST', body: `image=${b64}`, headers: form })],
  ];
}

export interface ErrorCase {
  name: string;
  init: () => RequestInit;
  status: number;
  error?: RegExp;
}

/** What every image route must refuse, and how. */
export function imageErrorCases(): ErrorCase[] {
  const png = (body: RequestInit['body']) => ({ method: 'POST', body, headers: { 'content-type': 'image/png' } });
  const form = (body: string) => ({ method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  return [
    { name: 'no body', init: () => ({ method: 'POST' }), status: 400, error: /missing image/ },
    { name: 'empty body', init: () => png(Buffer.alloc(0)), status: 400, error: /missing image/ },
    { name: 'form without image', init: () => form('a=1'), status: 400, error: /missing image/ },
    {
      name: 'multipart without an image part',
      init: () => {
        const f = new FormData();
        f.append('picture', new Blob([photo('skimage/astronaut.png')]), 'a.png');
        return { method: 'POST', body: f };
      },
      status: 400,
      error: /missing image/,
    },
    { name: 'bytes that are no image', init: () => png(garbage()), status: 400 },
    { name: 'truncated PNG', init: () => png(photo('skimage/astronaut.png').subarray(0, 600)), status: 400 },
    { name: 'truncated JPEG', init: () => png(photo('darknet/dog.jpg').subarray(0, 600)), status: 400 },
    { name: 'bad base64', init: () => form('image=!!!!not*base64'), status: 400 },
    {
      name: 'malformed multipart',
      init: () => ({ method: 'POST', body: 'x', headers: { 'content-type': 'multipart/form-data; boundary=nope' } }),
      status: 400,
    },
    {
      name: 'unsupported Content-Type',
      init: () => ({ method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
      status: 415,
      error: /Content-Type/,
    },
    { name: 'too many pixels (from the header)', init: () => png(pngClaiming(30000, 30000)), status: 413 },
  ];
}
