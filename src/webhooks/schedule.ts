// When signed webhook deliveries are retried, how long one attempt may take, when an endpoint that
// keeps failing is disabled, and the legacy per-app webhook's fixed schedule: one source for each.

/** Attempts of one delivery, the first included (spec: "up to 15 attempts"). */
export const MAX_ATTEMPTS = 15;
/** One attempt, connect to last response byte read. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Delay before attempt n+1 once attempt n failed, before jitter:
 *
 * | after attempt | 1    | 2   | 3   | 4   | 5    | 6    | 7  | 8  | 9  | 10 | 11  | 12  | 13  | 14  |
 * |---------------|------|-----|-----|-----|------|------|----|----|----|----|-----|-----|-----|-----|
 * | waits         | 30 s | 1 m | 2 m | 5 m | 10 m | 30 m | 1 h| 2 h| 4 h| 8 h| 12 h| 16 h| 20 h| 20 h|
 *
 * 83 h 48 min 30 s in all (about 3.5 days) from the first attempt to the 15th; with the ±20 %
 * jitter anywhere between 2.8 and 4.2 days. Growth is exponential up to 8 h, then flattens so the
 * last attempts still land at different times of day.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  30 * SECOND,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  4 * HOUR,
  8 * HOUR,
  12 * HOUR,
  16 * HOUR,
  20 * HOUR,
  20 * HOUR,
];

/** Each delay is spread uniformly over ±20 % so endpoints failing together do not retry together. */
export const RETRY_JITTER = 0.2;

/**
 * Delay before attempt `failedAttempt + 1` after attempt `failedAttempt` (1 to 14) failed: the
 * table above times a uniform factor in [0.8, 1.2). No attempt follows the 15th; for it (and
 * beyond) the last entry is returned, so a caller may compute the delay before deciding the
 * delivery is exhausted. Below 1 or not an integer is a caller's bug and throws.
 */
export function retryDelayMs(failedAttempt: number, random: () => number = Math.random): number {
  if (!Number.isInteger(failedAttempt) || failedAttempt < 1) throw new RangeError(`attempt ${failedAttempt} is not an attempt number (1 to ${MAX_ATTEMPTS})`);
  const base = RETRY_DELAYS_MS[Math.min(failedAttempt, RETRY_DELAYS_MS.length) - 1]!;
  return Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
}

/**
 * retryDelayMs times `scale`, the MEDIA_WEBHOOK_RETRY_SCALE test hook (read from configuration by
 * the caller). The full schedule lasts about 301 s at 0.001, 30 s at 0.0001 and 3 s at 0.00001.
 */
export function scaledDelayMs(failedAttempt: number, scale: number, random?: () => number): number {
  if (!Number.isFinite(scale) || scale < 0) throw new RangeError(`retry scale ${scale} must be a finite number ≥ 0`);
  return Math.round(retryDelayMs(failedAttempt, random) * scale);
}

/** Auto-disable: this many attempts in a row failed… */
export const AUTO_DISABLE_FAILED_ATTEMPTS = 50;
/** …and the first of that streak is older than this, */
export const AUTO_DISABLE_FAILING_FOR_MS = 24 * HOUR;
/** or this many deliveries in a row exhausted their attempts. */
export const AUTO_DISABLE_EXHAUSTED_DELIVERIES = 3;

/**
 * Whether an endpoint is disabled with reason auto_failures: the last 50 attempts (or more) all
 * failed and the first failure of that streak is more than 24 h old, or 3 deliveries in a row were
 * exhausted. Both counters reset on any successful attempt. Times are epoch milliseconds.
 * A busy endpoint that is down for a day is stopped; a quiet one is stopped once three events in
 * a row went undelivered (about 3.5 days of failures at the least).
 */
export function shouldAutoDisable(history: { consecutiveFailedAttempts: number; firstFailureAt?: number; consecutiveExhausted: number }, now: number): boolean {
  if (history.consecutiveExhausted >= AUTO_DISABLE_EXHAUSTED_DELIVERIES) return true;
  return (
    history.consecutiveFailedAttempts >= AUTO_DISABLE_FAILED_ATTEMPTS &&
    history.firstFailureAt !== undefined &&
    now - history.firstFailureAt > AUTO_DISABLE_FAILING_FOR_MS
  );
}

/** Legacy per-app webhook: retries after about 1 min, 10 min and 1 h, then the delivery is failed. */
export const LEGACY_RETRY_DELAYS_MS: readonly number[] = [60_000, 600_000, 3_600_000];
/** Legacy per-app webhook: one attempt may take 30 s. */
export const LEGACY_TIMEOUT_MS = 30_000;
