// 640x480 JPEG photos for the route-latency bench, made from the test photos (none of them is 640x480): the
// photo is scaled to fit (bilinear) and centred on grey, then encoded at quality 90; and the test photos scaled
// down to a given size for the small-image checks. A face photo (astronaut) for detection and recognition, a
// street photo (darknet person.jpg) for pose and objects.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

export const VGA = { width: 640, height: 480 } as const;

export interface Rgba {
  width: number;
  height: number;
  data: Uint8Array;
}

export function decode(file: string): Rgba {
  const bytes = readFileSync(file);
  if (file.endsWith('.png')) {
    const png = PNG.sync.read(bytes);
    return { width: png.width, height: png.height, data: png.data };
  }
  return jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true });
}

/** `src` scaled to fit `fill` of width x height (bilinear), centred on grey. */
function fitInto(src: Rgba, width: number, height: number, fill = 1): Rgba {
  const scale = Math.min(width / src.width, height / src.height) * fill;
  const w = Math.round(src.width * scale);
  const h = Math.round(src.height * scale);
  const left = Math.floor((width - w) / 2);
  const top = Math.floor((height - h) / 2);
  const out = new Uint8Array(width * height * 4).fill(114);
  for (let y = 0; y < h; y++) {
    const sy = Math.min(src.height - 1, Math.max(0, (y + 0.5) / scale - 0.5));
    const y0 = Math.floor(sy);
    const y1 = Math.min(src.height - 1, y0 + 1);
    const fy = sy - y0;
    for (let x = 0; x < w; x++) {
      const sx = Math.min(src.width - 1, Math.max(0, (x + 0.5) / scale - 0.5));
      const x0 = Math.floor(sx);
      const x1 = Math.min(src.width - 1, x0 + 1);
      const fx = sx - x0;
      const o = ((top + y) * width + left + x) * 4;
      for (let c = 0; c < 3; c++) {
        const at = (yy: number, xx: number) => src.data[(yy * src.width + xx) * 4 + c]!;
        const v = (at(y0, x0) * (1 - fx) + at(y0, x1) * fx) * (1 - fy) + (at(y1, x0) * (1 - fx) + at(y1, x1) * fx) * fy;
        out[o + c] = Math.round(v);
      }
      out[o + 3] = 255;
    }
  }
  return { width, height, data: out };
}

/**
 * test/data/<file> scaled (bilinear) so that its longer side is `side`, JPEG quality 90, no padding; `scale` maps
 * the original's pixel coordinates onto it. For the small-image checks (a Frigate-sized region).
 */
export function scaledJpeg(root: string, file: string, side: number): { bytes: Buffer; scale: number; width: number; height: number } {
  const src = decode(join(root, 'test', 'data', file));
  const scale = side / Math.max(src.width, src.height);
  const width = Math.round(src.width * scale);
  const height = Math.round(src.height * scale);
  return { bytes: Buffer.from(jpeg.encode(fitInto(src, width, height), 90).data), scale, width, height };
}

/**
 * A width x height JPEG of test/data/<file>, fitted and centred on grey (a camera frame of another aspect); with
 * `fill` < 1 the photo takes that fraction of the frame's width or height (people further away).
 */
export function fittedJpeg(root: string, file: string, width: number, height: number, fill = 1): Buffer {
  return jpeg.encode(fitInto(decode(join(root, 'test', 'data', file)), width, height, fill), 90).data;
}

/** A PNG of a JPEG's decoded pixels (jpeg-js): the same image for a decoder that always decodes whole. */
export function pngOfJpeg(jpegBytes: Buffer): Buffer {
  const raw = jpeg.decode(jpegBytes, { useTArray: true });
  const png = new PNG({ width: raw.width, height: raw.height });
  png.data = Buffer.from(raw.data);
  return PNG.sync.write(png);
}

/** A 640x480 JPEG of test/data/<file>. */
export function vgaJpeg(root: string, file: string): Buffer {
  return fittedJpeg(root, file, VGA.width, VGA.height);
}

export const VGA_FACE_PHOTO = 'skimage/astronaut.png';
export const VGA_SCENE_PHOTO = 'darknet/person.jpg';
