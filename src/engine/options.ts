// Checks of what a caller passes the engine: each helper returns the value (or its default from limits.ts) or
// throws EngineError INVALID_ARGUMENT with a message naming the option and what it accepts.

import { EngineError } from './errors.js';
import type { ImageHeader } from './image-header.js';
import { autoTiles, DETECT_DEFAULTS, ENGINE_RANGES, type IntRange } from './limits.js';
import type { DetectFacesOptions } from './types.js';

export function invalidArgument(message: string, cause?: unknown): EngineError {
  return new EngineError('INVALID_ARGUMENT', message, cause === undefined ? undefined : { cause });
}

/** A plain object (not null, not an array): what JSON objects and option bags are checked with. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` if it is an integer in `range`, the default for undefined; INVALID_ARGUMENT otherwise. */
export function intOption(value: unknown, name: string, fallback: number, range: IntRange): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max) {
    throw invalidArgument(`${name} must be an integer from ${range.min} to ${range.max} (got ${String(value)})`);
  }
  return value;
}

/** `value` if it is a number from 0 to 1, the default for undefined; INVALID_ARGUMENT otherwise. */
export function unitOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalidArgument(`${name} must be a number from 0 to 1 (got ${String(value)})`);
  }
  return value;
}

/** `value` if it is one of `choices`, the default for undefined; INVALID_ARGUMENT otherwise. */
export function choiceOption<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(choices as readonly string[]).includes(value)) {
    throw invalidArgument(`${name} must be one of ${choices.join(', ')} (got ${String(value)})`);
  }
  return value as T;
}

/** `value` if it is one of `choices`, null for null, the default for undefined; INVALID_ARGUMENT otherwise. */
export function modelOption<T extends string>(value: unknown, name: string, choices: readonly T[], fallback: T): T | null {
  if (value === null) return null;
  if (value !== undefined && (typeof value !== 'string' || !(choices as readonly string[]).includes(value))) {
    throw invalidArgument(`${name} must be null or one of ${choices.join(', ')} (got ${String(value)})`);
  }
  return (value as T | undefined) ?? fallback;
}

/** `value` if it is a non-empty string, undefined for undefined; INVALID_ARGUMENT otherwise. */
export function pathOption(value: unknown, name: string, what = 'a non-empty string'): string | undefined {
  if (value !== undefined && (typeof value !== 'string' || value.length === 0)) throw invalidArgument(`${name} must be ${what}`);
  return value;
}

/** Face-detection options with every default filled in; tiles stay 'auto' until the image size is known. */
export interface CheckedDetectOptions {
  scoreThreshold: number;
  iouThreshold: number;
  tiles: number | 'auto';
}

/** Checks face-detection options (an object: INVALID_ARGUMENT naming `what` otherwise). */
export function checkDetectOptions(opts: unknown, what = 'detectFaces options'): CheckedDetectOptions {
  if (typeof opts !== 'object' || opts === null) throw invalidArgument(`${what} must be an object`);
  const { scoreThreshold, iouThreshold, tiles = DETECT_DEFAULTS.tiles } = opts as DetectFacesOptions;
  const { min, max } = ENGINE_RANGES.tiles;
  if (tiles !== 'auto' && (typeof tiles !== 'number' || !Number.isInteger(tiles) || tiles < min || tiles > max)) {
    throw invalidArgument(`tiles must be 'auto' or an integer from ${min} to ${max} (got ${String(tiles)})`);
  }
  return {
    scoreThreshold: unitOption(scoreThreshold, 'scoreThreshold', DETECT_DEFAULTS.scoreThreshold),
    iouThreshold: unitOption(iouThreshold, 'iouThreshold', DETECT_DEFAULTS.iouThreshold),
    tiles,
  };
}

/** The detect options with 'auto' tiles resolved for this image. */
export function resolveTiles(options: CheckedDetectOptions, header: ImageHeader): CheckedDetectOptions & { tiles: number } {
  return { ...options, tiles: options.tiles === 'auto' ? autoTiles(header.width, header.height) : options.tiles };
}

/** EDGECV_BACKEND, the override the addon has always honoured; undefined when unset or empty. */
export function envBackend(): string | undefined {
  const value = process.env['EDGECV_BACKEND'];
  return value === undefined || value === '' ? undefined : value;
}
