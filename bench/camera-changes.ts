// What a camera does to a face, made in plain JS on decoded RGBA pixels, for the recognition evaluation: turned in
// the image plane, small, JPEG quality 30, blurred, dim and noisy. Deterministic: `n` (the photo's number) picks the
// direction of a turn and seeds the noise.
import jpeg from 'jpeg-js';
import { rotateRgba } from './shared/rotate-photo.js';
import type { Rgba } from './shared/vga-photos.js';

export interface CameraChange {
  name: string;
  apply: (img: Rgba, n: number) => Rgba;
}

const GREY = 114;

/** Bilinear sample of channel c at (x, y); outside the image: grey. */
function sample(img: Rgba, x: number, y: number, c: number): number {
  const x0 = Math.floor(x);
  const y0 = Math.floor(y);
  const at = (xx: number, yy: number) => (xx < 0 || yy < 0 || xx >= img.width || yy >= img.height ? GREY : img.data[(yy * img.width + xx) * 4 + c]!);
  const fx = x - x0;
  const fy = y - y0;
  return (at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx) * (1 - fy) + (at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx) * fy;
}

/** An image of width x height whose pixel (x, y) is the source at map(x, y) (centres of pixels). */
function remap(img: Rgba, width: number, height: number, map: (x: number, y: number) => [number, number]): Rgba {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [sx, sy] = map(x + 0.5, y + 0.5);
      const o = (y * width + x) * 4;
      for (let c = 0; c < 3; c++) data[o + c] = Math.round(sample(img, sx - 0.5, sy - 0.5, c));
      data[o + 3] = 255;
    }
  }
  return { width, height, data };
}

/** Scaled so that its longer side is `side`, centred on a grey canvas of canvasW x canvasH. */
function small(img: Rgba, side: number, canvasW: number, canvasH: number): Rgba {
  const s = side / Math.max(img.width, img.height);
  // Area-average first (a camera's sensor does), then place.
  const factor = Math.max(1, Math.floor(1 / s));
  const averaged = factor > 1 ? boxShrink(img, factor) : img;
  const s2 = side / Math.max(averaged.width, averaged.height);
  const left = (canvasW - averaged.width * s2) / 2;
  const top = (canvasH - averaged.height * s2) / 2;
  return remap(averaged, canvasW, canvasH, (x, y) => [(x - left) / s2, (y - top) / s2]);
}

function boxShrink(img: Rgba, f: number): Rgba {
  const width = Math.floor(img.width / f);
  const height = Math.floor(img.height / f);
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let yy = 0; yy < f; yy++) for (let xx = 0; xx < f; xx++) sum += img.data[((y * f + yy) * img.width + x * f + xx) * 4 + c]!;
        data[(y * width + x) * 4 + c] = Math.round(sum / (f * f));
      }
      data[(y * width + x) * 4 + 3] = 255;
    }
  }
  return { width, height, data };
}

/** Three passes of a (2r+1)-wide box filter along each axis: close to a Gaussian of sigma ~ r. */
function blurred(img: Rgba, r: number): Rgba {
  let cur = img;
  for (let pass = 0; pass < 3; pass++) {
    for (const horizontal of [true, false]) {
      const data = new Uint8Array(cur.data.length);
      for (let y = 0; y < cur.height; y++) {
        for (let x = 0; x < cur.width; x++) {
          for (let c = 0; c < 3; c++) {
            let sum = 0;
            for (let k = -r; k <= r; k++) {
              const xx = horizontal ? Math.min(cur.width - 1, Math.max(0, x + k)) : x;
              const yy = horizontal ? y : Math.min(cur.height - 1, Math.max(0, y + k));
              sum += cur.data[(yy * cur.width + xx) * 4 + c]!;
            }
            data[(y * cur.width + x) * 4 + c] = Math.round(sum / (2 * r + 1));
          }
          data[(y * cur.width + x) * 4 + 3] = 255;
        }
      }
      cur = { width: cur.width, height: cur.height, data };
    }
  }
  return cur;
}

/** A quarter of the light, with sensor noise of +-6 levels (xorshift seeded by n). */
function dim(img: Rgba, n: number): Rgba {
  let x = (n * 2654435761) >>> 0 || 1;
  const data = new Uint8Array(img.data.length);
  for (let i = 0; i < data.length; i++) {
    if (i % 4 === 3) {
      data[i] = 255;
      continue;
    }
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    data[i] = Math.max(0, Math.min(255, Math.round(img.data[i]! * 0.25 + (((x >>> 0) % 13) - 6))));
  }
  return { width: img.width, height: img.height, data };
}

function jpegAt(img: Rgba, quality: number): Rgba {
  const bytes = jpeg.encode({ width: img.width, height: img.height, data: img.data }, quality).data;
  return jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true });
}

/** A turn of `degrees`, counter-clockwise for odd n, clockwise for even n. */
const turn = (degrees: number): CameraChange => ({ name: `turned ${degrees}°`, apply: (img, n) => rotateRgba(img, n % 2 ? degrees : -degrees) });

export const CAMERA_CHANGES: readonly CameraChange[] = [
  { name: 'upright', apply: (img) => img },
  turn(15),
  turn(30),
  turn(45),
  turn(60),
  { name: 'small (96 px photo in 320x240)', apply: (img) => small(img, 96, 320, 240) },
  { name: 'JPEG q30', apply: (img) => jpegAt(img, 30) },
  { name: 'blurred (sigma ~2 px)', apply: (img) => blurred(img, 2) },
  { name: 'dim and noisy', apply: dim },
];
