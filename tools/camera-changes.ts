// What a camera does to a face, made in plain JS on decoded RGBA pixels, for the recognition evaluation: turned in
// the image plane, small, JPEG quality 30, blurred, dim and noisy. Deterministic: `n` (the photo's number) picks the
// direction of a turn and seeds the noise.
import jpeg from 'jpeg-js';
import { blurred, jpegOf, onCanvas, shrunk } from '../testkit/degraded-photos.js';
import { rotateRgba } from '../testkit/rotate-photo.js';
import type { Rgba } from '../testkit/vga-photos.js';

export interface CameraChange {
  name: string;
  apply: (img: Rgba, n: number) => Rgba;
}

/** The photo scaled (box averaging) so that its longer side is `side`, in the middle of a canvasW x canvasH frame. */
function small(img: Rgba, side: number, canvasW: number, canvasH: number): Rgba {
  return onCanvas(shrunk(img, Math.max(img.width, img.height) / side), canvasW, canvasH);
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
  return jpeg.decode(jpegOf(img, quality), { useTArray: true, formatAsRGBA: true });
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
  { name: 'blurred (sigma 2 px)', apply: (img) => blurred(img, 2) },
  { name: 'dim and noisy', apply: dim },
];
