// Photos turned in JS (testkit/rotate-photo.ts), made once per photo and angle for every test file of the worker:
// face-alignment.test.ts and faceless-photos.test.ts turn the same johns by the same angles, and each turn
// decodes, rotates and encodes in JS.
import { rotatedPhoto as rotate } from '../../testkit/rotate-photo.js';

const turned = new Map<string, Buffer>();

/** `file` turned `degrees` counterclockwise, as a JPEG (rotate() in testkit/rotate-photo.ts), cached. */
export function rotatedPhoto(file: string, degrees: number): Buffer {
  const key = `${degrees} ${file}`;
  let bytes = turned.get(key);
  if (!bytes) turned.set(key, (bytes = rotate(file, degrees)));
  return bytes;
}
