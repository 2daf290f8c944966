// A small progressive JPEG encoder for tests and benches (jpeg-js writes baseline only): one grey component,
// spectral selection only (a DC scan, then the AC coefficients in `bands`), fixed Huffman tables in which every
// symbol used has an 8-bit code (DC: 4 bits). Not small files, but real progressive ones that libjpeg decodes
// without a warning: each scan is one more pass of the decoder over every block.

/** The AC bands of the scans after the DC one: 10 of them, as the standard script has about 10 scans. */
export const DEFAULT_BANDS: [number, number][] = [
  [1, 2],
  [3, 5],
  [6, 9],
  [10, 14],
  [15, 20],
  [21, 27],
  [28, 35],
  [36, 44],
  [45, 53],
  [54, 63],
];

const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43,
  36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];
/** Quantizer of every coefficient (one table: quality does not matter here). */
const Q = 12;

class BitWriter {
  readonly bytes: number[] = [];
  #acc = 0;
  #n = 0;
  write(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i--) {
      this.#acc = (this.#acc << 1) | ((value >> i) & 1);
      if (++this.#n === 8) this.#flush();
    }
  }
  #flush(): void {
    this.bytes.push(this.#acc);
    if (this.#acc === 0xff) this.bytes.push(0); // byte stuffing
    this.#acc = 0;
    this.#n = 0;
  }
  end(): Buffer {
    while (this.#n !== 0) this.write(1, 1); // pad with 1 bits
    return Buffer.from(this.bytes);
  }
}

function segment(marker: number, payload: number[]): Buffer {
  return Buffer.from([0xff, marker, (payload.length + 2) >> 8, (payload.length + 2) & 255, ...payload]);
}

/** Magnitude category and the bits that follow it (JPEG's "additional bits"). */
function category(v: number): [number, number] {
  const a = Math.abs(v);
  const size = a === 0 ? 0 : Math.floor(Math.log2(a)) + 1;
  return [size, v >= 0 ? v : v + (1 << size) - 1];
}

/** The quantized coefficients of every 8x8 block, in zigzag order (blocks row by row); a separable DCT. */
function blocksOf(grey: Uint8Array, width: number, height: number): Int16Array[] {
  const bw = Math.ceil(width / 8);
  const bh = Math.ceil(height / 8);
  // basis[u * 8 + x]: C(u) cos((2x + 1) u pi / 16) / 2
  const basis = Array.from(
    { length: 64 },
    (_, k) => ((k < 8 ? Math.SQRT1_2 : 1) * Math.cos(((2 * (k % 8) + 1) * Math.floor(k / 8) * Math.PI) / 16)) / 2,
  );
  const zigzagOf = new Int8Array(64);
  ZIGZAG.forEach((natural, zz) => (zigzagOf[natural] = zz));
  const out: Int16Array[] = [];
  const px = new Float64Array(64);
  const rows = new Float64Array(64);
  for (let by = 0; by < bh; by++) {
    for (let bx = 0; bx < bw; bx++) {
      for (let y = 0; y < 8; y++) {
        for (let x = 0; x < 8; x++) px[y * 8 + x] = grey[Math.min(height - 1, by * 8 + y) * width + Math.min(width - 1, bx * 8 + x)]! - 128;
      }
      for (let y = 0; y < 8; y++) {
        for (let u = 0; u < 8; u++) {
          let s = 0;
          for (let x = 0; x < 8; x++) s += px[y * 8 + x]! * basis[u * 8 + x]!;
          rows[y * 8 + u] = s;
        }
      }
      const coef = new Int16Array(64);
      for (let v = 0; v < 8; v++) {
        for (let u = 0; u < 8; u++) {
          let s = 0;
          for (let y = 0; y < 8; y++) s += rows[y * 8 + u]! * basis[v * 8 + y]!;
          coef[zigzagOf[v * 8 + u]!] = Math.round(s / Q);
        }
      }
      out.push(coef);
    }
  }
  return out;
}

/** A progressive JPEG of a grey image: a DC scan, then one AC scan per band. */
export function progressiveGreyJpeg(grey: Uint8Array, width: number, height: number, bands = DEFAULT_BANDS): Buffer {
  const blocks = blocksOf(grey, width, height);
  // DC: categories 0-11, each a 4-bit code (its own value). AC: every (run, size) with size 1-10, ZRL and EOB0,
  // 8-bit codes in symbol order.
  const acSymbols = [0x00, 0xf0];
  for (let run = 0; run < 16; run++) for (let size = 1; size <= 10; size++) acSymbols.push((run << 4) | size);
  const acCode = new Map(acSymbols.map((s, i) => [s, i]));
  const counts = (length: number, n: number) => Array.from({ length: 16 }, (_, i) => (i === length - 1 ? n : 0));
  const dht = [
    segment(0xc4, [0x00, ...counts(4, 12), ...Array.from({ length: 12 }, (_, i) => i)]),
    segment(0xc4, [0x10, ...counts(8, acSymbols.length), ...acSymbols]),
  ];
  const scans: Buffer[] = [];
  // DC scan
  const dc = new BitWriter();
  let previous = 0;
  for (const b of blocks) {
    const [size, bits] = category(b[0]! - previous);
    previous = b[0]!;
    dc.write(size, 4);
    if (size > 0) dc.write(bits, size);
  }
  scans.push(segment(0xda, [1, 1, 0x00, 0, 0, 0]), dc.end());
  for (const [ss, se] of bands) {
    const w = new BitWriter();
    for (const b of blocks) {
      let run = 0;
      for (let k = ss; k <= se; k++) {
        const v = b[k]!;
        if (v === 0) {
          run++;
          continue;
        }
        for (; run > 15; run -= 16) w.write(acCode.get(0xf0)!, 8);
        const [size, bits] = category(Math.max(-1023, Math.min(1023, v)));
        w.write(acCode.get((run << 4) | size)!, 8);
        w.write(bits, size);
        run = 0;
      }
      if (run > 0) w.write(acCode.get(0x00)!, 8); // EOB (a run of one block)
    }
    scans.push(segment(0xda, [1, 1, 0x00, ss, se, 0]), w.end());
  }
  const dqt = segment(0xdb, [0, ...Array<number>(64).fill(Q)]);
  const sof = segment(0xc2, [8, height >> 8, height & 255, width >> 8, width & 255, 1, 1, 0x11, 0]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), dqt, sof, ...dht, ...scans, Buffer.from([0xff, 0xd9])]);
}
