// An HLS variant's BANDWIDTH: the peak segment bit rate as RFC 8216 (section 4.3.4.2) defines it,
// the largest bit rate of any contiguous set of segments lasting 0.5 to 1.5 target durations. One
// short segment alone (a stream's short first one, the rest of the division at the end) is not
// such a set: its rate, an IDR frame over one second, is not a rate a player must sustain.

export interface MeasuredSegment {
  readonly duration: number;
  readonly bytes: number;
}

/** Peak segment bit rate in bits per second (0 for no segments). */
export function peakSegmentBitRate(segments: readonly MeasuredSegment[]): number {
  if (segments.length === 0) return 0;
  // The target duration a playlist of these segments carries: the longest, rounded up as ffmpeg does.
  const target = Math.max(1, Math.ceil(Math.max(...segments.map((s) => s.duration)) - 0.001));
  const [low, high] = [0.5 * target, 1.5 * target];
  let peak = 0;
  for (let i = 0; i < segments.length; i++) {
    let seconds = 0;
    let bits = 0;
    for (let j = i; j < segments.length && seconds < high; j++) {
      seconds += segments[j]!.duration;
      bits += segments[j]!.bytes * 8;
      if (seconds >= low && seconds <= high) peak = Math.max(peak, bits / seconds);
    }
  }
  if (peak > 0) return peak;
  // No set lasts long enough (a stream shorter than half a target duration): its whole rate.
  const seconds = segments.reduce((sum, s) => sum + s.duration, 0);
  return segments.reduce((sum, s) => sum + s.bytes * 8, 0) / Math.max(seconds, 0.001);
}
