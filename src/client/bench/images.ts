// The photos `edgecv bench` sends: a file or every JPEG/PNG of a folder, optionally resized in JS (jpeg-js, pngjs:
// no native codec on the client) to a given width, as the original multi_client resized its frames.

import fs from 'node:fs';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { ClientError } from '../api-client.js';

export interface BenchImage {
  name: string;
  bytes: Buffer;
  type: 'image/jpeg' | 'image/png';
}

const isPng = (b: Buffer) => b.length > 8 && b.readUInt32BE(0) === 0x89504e47;
const isJpeg = (b: Buffer) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;

/** RGBA pixels of a JPEG or PNG. */
function decode(bytes: Buffer): { width: number; height: number; data: Uint8Array } {
  if (isPng(bytes)) return PNG.sync.read(bytes);
  return jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true, maxMemoryUsageInMB: 1024 });
}

/** The image scaled to `width` pixels wide (aspect kept; area-averaged), as a JPEG of quality 90. */
export function resizeImage(bytes: Buffer, width: number): Buffer {
  const src = decode(bytes);
  const height = Math.max(1, Math.round((src.height * width) / src.width));
  const out = Buffer.alloc(width * height * 4);
  const sx = src.width / width;
  const sy = src.height / height;
  for (let y = 0; y < height; y++) {
    const y0 = Math.floor(y * sy);
    const y1 = Math.max(y0 + 1, Math.floor((y + 1) * sy));
    for (let x = 0; x < width; x++) {
      const x0 = Math.floor(x * sx);
      const x1 = Math.max(x0 + 1, Math.floor((x + 1) * sx));
      let r = 0;
      let g = 0;
      let b = 0;
      for (let yy = y0; yy < y1; yy++) {
        for (let xx = x0; xx < x1; xx++) {
          const i = (yy * src.width + xx) * 4;
          r += src.data[i]!;
          g += src.data[i + 1]!;
          b += src.data[i + 2]!;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      const o = (y * width + x) * 4;
      out[o] = r / n;
      out[o + 1] = g / n;
      out[o + 2] = b / n;
      out[o + 3] = 255;
    }
  }
  return jpeg.encode({ data: out, width, height }, 90).data;
}

/** The images of a file or folder (JPEG and PNG, by content), sorted by name; resized when `resize` is given. */
export function loadBenchImages(where: string, resize?: number): BenchImage[] {
  let files: string[];
  try {
    files = fs.statSync(where).isDirectory()
      ? fs
          .readdirSync(where)
          .sort()
          .map((f) => path.join(where, f))
          .filter((f) => fs.statSync(f).isFile())
      : [where];
  } catch (e) {
    throw new ClientError(`cannot read --images ${where}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const images: BenchImage[] = [];
  for (const file of files) {
    const bytes = fs.readFileSync(file);
    if (!isPng(bytes) && !isJpeg(bytes)) continue;
    let image: BenchImage = { name: path.basename(file), bytes, type: isPng(bytes) ? 'image/png' : 'image/jpeg' };
    if (resize !== undefined) {
      try {
        image = { ...image, bytes: resizeImage(bytes, resize), type: 'image/jpeg' };
      } catch (e) {
        throw new ClientError(`cannot resize ${file}: ${(e as Error).message}`);
      }
    }
    images.push(image);
  }
  if (images.length === 0) throw new ClientError(`no JPEG or PNG image in --images ${where}`);
  return images;
}
