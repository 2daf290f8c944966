// The bench-only packages (opencv4nodejs, sharp), installed by scripts/dev/bench-deps.mjs into .cache/bench-deps,
// outside node_modules, so `npm ci` and `npm test` never build them. Loaded here through that folder's own
// require, typed by the small part of their API the bench uses.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export const BENCH_DEPS_DIR = join('.cache', 'bench-deps');

// ------------------------------------------------------------------ sharp (decode + resize, libvips)

export interface SharpPipeline {
  metadata(): Promise<{ width?: number; height?: number }>;
  resize(width: number, height: number, options: { fit: 'inside' | 'fill'; kernel?: string }): SharpPipeline;
  removeAlpha(): SharpPipeline;
  raw(): SharpPipeline;
  toBuffer(options: { resolveWithObject: true }): Promise<{ data: Buffer; info: { width: number; height: number; channels: number } }>;
}
export type Sharp = (input: Buffer) => SharpPipeline;

// ------------------------------------------------------------------ opencv4nodejs (@u4/opencv4nodejs)

export interface CvSize {
  width: number;
  height: number;
}
export interface CvVec3 {
  x: number;
}
export interface CvRect {
  x: number;
  y: number;
  width: number;
  height: number;
}
export interface CvMat {
  rows: number;
  cols: number;
  sizes: number[];
  getData(): Buffer;
  flattenFloat(rows: number, cols: number): CvMat;
  resizeAsync(size: CvSize, fx?: number, fy?: number, interpolation?: number): Promise<CvMat>;
  copyMakeBorderAsync(top: number, bottom: number, left: number, right: number, borderType: number, value: CvVec3): Promise<CvMat>;
  bgrToGrayAsync(): Promise<CvMat>;
}
export interface CvNet {
  setInput(blob: CvMat, name?: string): void;
  forwardAsync(outputNames: string[]): Promise<CvMat[]>;
}
export interface CvCascade {
  detectMultiScaleAsync(
    image: CvMat,
    scaleFactor?: number,
    minNeighbors?: number,
    flags?: number,
    minSize?: CvSize,
  ): Promise<{ objects: CvRect[]; numDetections: number[] }>;
}
export interface Cv {
  version: { major: number; minor: number; revision: number };
  Size: new (width: number, height: number) => CvSize;
  Vec3: new (a: number, b: number, c: number) => CvVec3;
  CascadeClassifier: new (xmlFile: string) => CvCascade;
  imdecodeAsync(bytes: Buffer): Promise<CvMat>;
  blobFromImageAsync(image: CvMat, scaleFactor: number, size: CvSize, mean: CvVec3, swapRB: boolean, crop: boolean): Promise<CvMat>;
  readNetFromONNX(file: string): CvNet;
  setNumThreads(threads: number): void;
  INTER_AREA: number;
  INTER_LINEAR: number;
  BORDER_CONSTANT: number;
}

// ------------------------------------------------------------------ loading

/** What set-up recorded per package: installed and built, or why not. */
interface DepsStatus {
  packages: Record<string, { ok: boolean; reason?: string; version?: string }>;
}

export type Loaded<T> = { ok: true; value: T; version: string } | { ok: false; reason: string };

function readStatus(root: string): DepsStatus | null {
  const file = join(root, BENCH_DEPS_DIR, 'status.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DepsStatus) : null;
}

/** One bench-only package, or why it is not there (set-up's recorded reason, or the load error). */
export function loadBenchDep<T>(root: string, name: string, prepare?: (require: NodeJS.Require) => void): Loaded<T> {
  const status = readStatus(root);
  if (!status) return { ok: false, reason: `bench-only packages not set up (run \`node scripts/dev/bench-deps.mjs\`)` };
  const entry = status.packages[name];
  if (!entry?.ok) return { ok: false, reason: entry?.reason ?? `${name} is not in ${BENCH_DEPS_DIR}` };
  try {
    const require = createRequire(join(root, BENCH_DEPS_DIR, 'package.json'));
    prepare?.(require);
    return { ok: true, value: require(name) as T, version: entry.version ?? '' };
  } catch (err) {
    return { ok: false, reason: `${name} did not load: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` };
  }
}

/**
 * opencv4nodejs, quiet and safe: its build helper's info lines are silenced, and its external-memory tracking is
 * off (with it on, large async dnn outputs crashed V8's GC here: "Check failed: marking_done_").
 */
export function loadOpenCv(root: string): Loaded<Cv> {
  return loadBenchDep<Cv>(root, '@u4/opencv4nodejs', (require) => {
    process.env['OPENCV4NODEJS_DISABLE_EXTERNAL_MEM_TRACKING'] = '1';
    (require('@u4/opencv-build') as { Log: { silence: boolean } }).Log.silence = true;
  });
}
