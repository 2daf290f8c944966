// Base64 as clients really send it, for images in forms and crops in gallery files: no HTTP here, so the server
// and the gallery's import both read it and answer its errors in their own way.

/** Why a text is not base64: `empty` (nothing after the prefix), anything else is malformed. */
export class Base64Error extends Error {
  override name = 'Base64Error';
  constructor(
    message: string,
    readonly empty = false,
  ) {
    super(message);
  }
}

/**
 * Decodes base64 text as clients really send it: `+` that became spaces, line breaks, a `data:...;base64,`
 * prefix, base64url letters, missing padding. `where` names the text in the error. Throws Base64Error.
 */
export function decodeBase64(text: string, where: string): Buffer {
  let s = text.trim();
  const data = /^data:[^,]*?;base64,/i.exec(s);
  if (data) s = s.slice(data[0].length);
  else if (/^data:/i.test(s)) throw new Base64Error(`${where}: a data: URL must be base64 encoded (data:<type>;base64,...)`);
  s = s
    .replace(/[\r\n\t]/g, '')
    .replace(/ /g, '+')
    .replace(/-/g, '+')
    .replace(/_/g, '/');
  s = s.replace(/=+$/, '');
  if (s.length === 0) throw new Base64Error(`${where} is empty`, true);
  if (!/^[A-Za-z0-9+/]+$/.test(s) || s.length % 4 === 1) throw new Base64Error(`${where} is not valid base64`);
  return Buffer.from(s, 'base64');
}
