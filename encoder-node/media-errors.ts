// The one error type of the media engine: a closed code set the job records as its error_code.
export type MediaErrorCode =
  | "input_unreachable"
  | "input_invalid"
  | "input_unsupported"
  | "encode_failed"
  | "output_write_failed"
  | "output_write_denied"
  | "subtitle_unreachable"
  | "subtitle_invalid"
  | "transcription_failed"
  | "drm_key_unavailable"
  | "canceled"
  | "internal";

// A retry helps only where the cause can pass: storage or network trouble, or our own bug.
const RETRYABLE: ReadonlySet<MediaErrorCode> = new Set(["input_unreachable", "subtitle_unreachable", "output_write_failed", "internal"]);

export class MediaError extends Error {
  constructor(
    readonly code: MediaErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "MediaError";
  }

  /** Whether running the same step again may succeed. */
  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }
}

export const isMediaError = (e: unknown): e is MediaError => e instanceof MediaError;
