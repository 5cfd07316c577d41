import { describe, expect, it } from "vitest";
import { peakSegmentBitRate } from "./bandwidth.js";

const seg = (duration: number, kbits: number) => ({ duration, bytes: (kbits * 1000) / 8 });

describe("peakSegmentBitRate (RFC 8216's peak segment bit rate)", () => {
  it("is the largest rate of contiguous segments lasting 0.5 to 1.5 target durations", () => {
    // Target 4 s: sets of 2 to 6 s. The 4 s segments alone, and the pairs that stay within 6 s.
    expect(peakSegmentBitRate([seg(4, 4000), seg(4, 8000), seg(4, 4000)])).toBe(2_000_000);
    // A 2 s segment beside a 4 s one: together 6 s at 10,000 kbit, 1,667 kbit/s; alone 2 s at 6,000, 3,000 kbit/s.
    expect(peakSegmentBitRate([seg(4, 4000), seg(2, 6000)])).toBe(3_000_000);
  });

  it("does not count a short first segment alone: its IDR frame over one second is not a rate to sustain", () => {
    // 1 s, 3 s, then 4 s: the first second at 2,000 kbit/s, everything else at 1,000.
    const stream = [seg(1, 2000), seg(3, 3000), seg(4, 4000), seg(4, 4000)];
    expect(peakSegmentBitRate(stream)).toBe(1_250_000); // 1 s + 3 s: 5,000 kbit over 4 s
    // The rule it replaces took every segment of 0.5 s or more alone: 2,000 kbit/s.
    expect(Math.max(...stream.map((s) => (s.bytes * 8) / s.duration))).toBe(2_000_000);
  });

  it("does not count a short last segment alone either, only with the one before it", () => {
    // Alone, 0.5 s at 3,000 kbit/s; with the 4 s before it, 5,500 kbit over 4.5 s.
    expect(peakSegmentBitRate([seg(4, 4000), seg(4, 4000), seg(0.5, 1500)])).toBeCloseTo(5_500_000 / 4.5, 3);
  });

  it("a stream shorter than half a target duration: its whole rate; none: 0", () => {
    expect(peakSegmentBitRate([seg(0.3, 300)])).toBe(1_000_000);
    expect(peakSegmentBitRate([])).toBe(0);
  });
});
