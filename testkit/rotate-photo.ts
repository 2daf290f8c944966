// In-plane rotation of a photo in JS (no OpenCV, so tests and benches check the addon against an independent
// transform): the decoded pixels turned about their centre onto a canvas grown to hold them all, black outside,
// bilinear, encoded again as a JPEG.
import jpeg from 'jpeg-js';
import { decode, type Rgba } from './vga-photos.js';

/** `src` turned `degrees` counterclockwise on screen (the sense of OpenCV's getRotationMatrix2D). */
export function rotateRgba(src: Rgba, degrees: number): Rgba {
  const a = (degrees * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const width = Math.round(Math.abs(cos) * src.width + Math.abs(sin) * src.height);
  const height = Math.round(Math.abs(sin) * src.width + Math.abs(cos) * src.height);
  const data = new Uint8Array(width * height * 4);
  const scx = (src.width - 1) / 2;
  const scy = (src.height - 1) / 2;
  const dcx = (width - 1) / 2;
  const dcy = (height - 1) / 2;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      // Inverse map: destination pixel -> source pixel (y points down, so counterclockwise on screen is -a here).
      const dx = x - dcx;
      const dy = y - dcy;
      const sx = scx + cos * dx - sin * dy;
      const sy = scy + sin * dx + cos * dy;
      const d = (y * width + x) * 4;
      data[d + 3] = 255;
      const x0 = Math.floor(sx);
      const y0 = Math.floor(sy);
      if (x0 < 0 || y0 < 0 || x0 + 1 >= src.width || y0 + 1 >= src.height) continue;
      const fx = sx - x0;
      const fy = sy - y0;
      const s = (y0 * src.width + x0) * 4;
      const below = s + src.width * 4;
      for (let c = 0; c < 3; c++) {
        const top = src.data[s + c]! * (1 - fx) + src.data[s + 4 + c]! * fx;
        const bottom = src.data[below + c]! * (1 - fx) + src.data[below + 4 + c]! * fx;
        data[d + c] = Math.round(top * (1 - fy) + bottom * fy);
      }
    }
  }
  return { width, height, data };
}

/** The JPEG or PNG photo `file` turned `degrees` counterclockwise, as a JPEG (quality 95). */
export function rotatedPhoto(file: string, degrees: number): Buffer {
  const turned = rotateRgba(decode(file), degrees);
  return Buffer.from(jpeg.encode({ width: turned.width, height: turned.height, data: turned.data }, 95).data);
}
