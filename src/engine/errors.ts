// Typed engine errors. Native rejections carry a string `.code`; toEngineError() turns them (and anything
// else thrown) into EngineError so callers can switch on `code` without string-matching messages.

export const ENGINE_ERROR_CODES = [
  'OVERLOADED',
  'INVALID_IMAGE',
  'IMAGE_TOO_LARGE',
  'UNSUPPORTED_FORMAT',
  'CLOSED',
  'INTERNAL',
  'INVALID_ARGUMENT',
] as const;

export type EngineErrorCode = (typeof ENGINE_ERROR_CODES)[number];

export class EngineError extends Error {
  readonly code: EngineErrorCode;

  constructor(code: EngineErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EngineError';
    this.code = code;
  }
}

export function isEngineErrorCode(value: unknown): value is EngineErrorCode {
  return typeof value === 'string' && (ENGINE_ERROR_CODES as readonly string[]).includes(value);
}

/** Maps a native rejection (an Error with a known `.code`) or anything else thrown to an EngineError. */
export function toEngineError(err: unknown): EngineError {
  if (err instanceof EngineError) return err;
  if (err instanceof Error) {
    const code = (err as Error & { code?: unknown }).code;
    return new EngineError(isEngineErrorCode(code) ? code : 'INTERNAL', err.message, { cause: err });
  }
  return new EngineError('INTERNAL', `non-Error thrown: ${String(err)}`, { cause: err });
}
