// A progressive stream's media playlists as published while they grow: started at 0, and ended
// where they are after a failure.

/**
 * Where a growing playlist starts: at its beginning, not at its "live edge". A millisecond, not 0:
 * Shaka Player 5.2 takes an offset of 0 for none (it tests the value's truth) and starts 3 target
 * durations from the end; hls.js honours either. A finished playlist starts there anyway.
 */
export const START_AT_ZERO = "#EXT-X-START:TIME-OFFSET=0.001,PRECISE=YES";

/** A media playlist as published: EXT-X-START after the header lines, once. */
export function withStartAtZero(text: string): string {
  if (text.includes("#EXT-X-START:")) return text;
  const lines = text.split("\n");
  // After #EXTM3U and the playlist's own tags, before the first segment's lines.
  const at = lines.findIndex(
    (l) => l.startsWith("#EXTINF:") || l.startsWith("#EXT-X-MAP:") || l.startsWith("#EXT-X-KEY:") || l.startsWith("#EXT-X-DISCONTINUITY"),
  );
  lines.splice(at < 0 ? lines.length : at, 0, START_AT_ZERO);
  return lines.join("\n");
}

/** A media playlist ended by the publisher after a failure: what was published plays to its end. */
export function ended(text: string): string {
  return text.includes("#EXT-X-ENDLIST") ? text : `${text.trimEnd()}\n#EXT-X-ENDLIST\n`;
}
