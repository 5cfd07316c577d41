import { describe, expect, it } from "vitest";
import {
  ATTEMPT_TIMEOUT_MS,
  LEGACY_RETRY_DELAYS_MS,
  LEGACY_TIMEOUT_MS,
  MAX_ATTEMPTS,
  RETRY_DELAYS_MS,
  retryDelayMs,
  scaledDelayMs,
  shouldAutoDisable,
} from "./schedule.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const retries = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => i + 1);
const sum = (random: () => number) => retries.reduce((total, n) => total + retryDelayMs(n, random), 0);

describe("retry schedule", () => {
  it("has 15 attempts, 14 delays, 10 s per attempt", () => {
    expect(MAX_ATTEMPTS).toBe(15);
    expect(RETRY_DELAYS_MS).toHaveLength(14);
    expect(ATTEMPT_TIMEOUT_MS).toBe(10_000);
  });

  it("starts at 30 s, never shrinks, and tops out below a day", () => {
    const base = retries.map((n) => retryDelayMs(n, () => 0.5));
    expect(base).toEqual(RETRY_DELAYS_MS);
    expect(base[0]).toBe(30_000);
    for (let i = 1; i < base.length; i++) expect(base[i]!).toBeGreaterThanOrEqual(base[i - 1]!);
    expect(Math.max(...base)).toBeLessThanOrEqual(DAY);
  });

  it("lasts about 3.5 days, 2.8 to 4.2 with jitter", () => {
    expect(sum(() => 0.5) / DAY).toBeCloseTo(3.49, 2);
    expect(sum(() => 0)).toBeGreaterThanOrEqual(2.75 * DAY);
    expect(sum(() => 0.999999)).toBeLessThanOrEqual(4.2 * DAY);
    for (let run = 0; run < 20; run++) {
      const total = sum(Math.random);
      expect(total).toBeGreaterThanOrEqual(0.8 * sum(() => 0.5));
      expect(total).toBeLessThanOrEqual(1.2 * sum(() => 0.5));
    }
  });

  it("jitters each delay within ±20 %", () => {
    for (const n of retries) {
      const base = RETRY_DELAYS_MS[n - 1]!;
      expect(retryDelayMs(n, () => 0)).toBe(Math.round(base * 0.8));
      expect(retryDelayMs(n, () => 0.999999)).toBeLessThanOrEqual(Math.round(base * 1.2));
      const d = retryDelayMs(n);
      expect(d).toBeGreaterThanOrEqual(base * 0.8 - 1);
      expect(d).toBeLessThanOrEqual(base * 1.2 + 1);
    }
  });

  it("refuses a non-attempt and answers the last delay past the 14th (unused: no attempt follows)", () => {
    for (const n of [0, -1, 1.5, Number.NaN]) expect(() => retryDelayMs(n), String(n)).toThrow(RangeError);
    expect(retryDelayMs(15, () => 0.5)).toBe(RETRY_DELAYS_MS[13]);
    expect(scaledDelayMs(16, 0.001, () => 0.5)).toBe(72_000);
  });

  it("scales every delay for tests", () => {
    const mid = () => 0.5;
    expect(scaledDelayMs(1, 0.001, mid)).toBe(30);
    expect(scaledDelayMs(14, 0.001, mid)).toBe(72_000);
    expect(retries.reduce((t, n) => t + scaledDelayMs(n, 0.00001, mid), 0)).toBeLessThan(5_000);
    expect(scaledDelayMs(3, 1, mid)).toBe(retryDelayMs(3, mid));
    expect(scaledDelayMs(3, 0, mid)).toBe(0);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => scaledDelayMs(1, bad)).toThrow(RangeError);
  });

  it("keeps the legacy schedule: 30 s timeout, retries after 1 min, 10 min, 1 h", () => {
    expect(LEGACY_TIMEOUT_MS).toBe(30_000);
    expect(LEGACY_RETRY_DELAYS_MS).toEqual([60_000, 600_000, 3_600_000]);
  });
});

describe("auto-disable", () => {
  const now = 10 * DAY;

  it("disables after 50 failed attempts in a row spanning more than 24 h", () => {
    expect(shouldAutoDisable({ consecutiveFailedAttempts: 50, firstFailureAt: now - DAY - 1, consecutiveExhausted: 0 }, now)).toBe(true);
    expect(shouldAutoDisable({ consecutiveFailedAttempts: 49, firstFailureAt: now - 5 * DAY, consecutiveExhausted: 2 }, now)).toBe(false);
    expect(shouldAutoDisable({ consecutiveFailedAttempts: 500, firstFailureAt: now - DAY, consecutiveExhausted: 0 }, now)).toBe(false);
    expect(shouldAutoDisable({ consecutiveFailedAttempts: 500, consecutiveExhausted: 0 }, now)).toBe(false);
  });

  it("disables after 3 exhausted deliveries in a row", () => {
    expect(shouldAutoDisable({ consecutiveFailedAttempts: 45, firstFailureAt: now - HOUR, consecutiveExhausted: 3 }, now)).toBe(true);
    expect(shouldAutoDisable({ consecutiveFailedAttempts: 0, consecutiveExhausted: 0 }, now)).toBe(false);
  });
});
