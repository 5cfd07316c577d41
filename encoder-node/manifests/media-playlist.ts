// Media playlists as the manifests read them: segments, durations, byte ranges, the init map;
// and the RFC 6381 codec string of a playlist's stream, read from its first segment.
import path from "node:path";
import { sniffStreamCodec } from "../codec-sniff.js";
import { probeStreamCodec, type StreamCodec } from "../probe.js";

export interface MediaPlaylist {
  version: number;
  init?: string;
  segments: { uri: string; duration: number; bytes?: number }[];
}

/** The parts of a media playlist the master needs: segments with durations, byte ranges, the init map. */
export function parseMediaPlaylist(text: string): MediaPlaylist {
  const out: MediaPlaylist = { version: 1, segments: [] };
  let duration = 0;
  let bytes: number | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "") continue;
    if (line.startsWith("#EXT-X-VERSION:")) out.version = Number(line.slice(15)) || 1;
    else if (line.startsWith("#EXT-X-MAP:")) out.init ??= /URI="([^"]+)"/.exec(line)?.[1];
    else if (line.startsWith("#EXTINF:")) duration = Number.parseFloat(line.slice(8));
    else if (line.startsWith("#EXT-X-BYTERANGE:")) bytes = Number.parseInt(line.slice(17), 10);
    else if (!line.startsWith("#")) {
      out.segments.push({ uri: line, duration, ...(bytes !== undefined ? { bytes } : {}) });
      duration = 0;
      bytes = undefined;
    }
  }
  return out;
}

/** RFC 6381 codec string of an encoded stream, as HLS CODECS wants it. */
export function codecString(c: StreamCodec, isoBmff: boolean): string {
  const hex = (n: number) => n.toString(16).padStart(2, "0").toUpperCase();
  switch (c.codec) {
    case "h264": {
      const profile: Record<string, string> = {
        "Constrained Baseline": "42E0",
        Baseline: "4200",
        Main: "4D40",
        Extended: "5800",
        High: "6400",
        "High 10": "6E00",
        "High 4:2:2": "7A00",
        "High 4:4:4 Predictive": "F400",
      };
      return `avc1.${profile[c.profile] ?? "6400"}${hex(Math.max(0, c.level))}`;
    }
    case "hevc": {
      const main10 = c.profile === "Main 10";
      return `${isoBmff ? "hvc1" : "hev1"}.${main10 ? "2.4" : "1.6"}.L${Math.max(0, c.level)}.B0`;
    }
    case "av1": {
      const profile = c.profile === "High" ? 1 : c.profile === "Professional" ? 2 : 0;
      const depth = /10/.test(c.pixelFormat) ? "10" : "08";
      return `av01.${profile}.${String(Math.max(0, c.level)).padStart(2, "0")}M.${depth}`;
    }
    case "vp9": {
      // ffprobe names the profile "Profile 2"; 10-bit is profile 2 (4:2:0) or 3 (4:4:4) when it does not.
      const tenBit = /10/.test(c.pixelFormat);
      const profile = /Profile ([0-3])/.exec(c.profile)?.[1] ?? (tenBit ? (/444/.test(c.pixelFormat) ? "3" : "2") : /444/.test(c.pixelFormat) ? "1" : "0");
      return `vp09.0${profile}.${String(Math.max(10, c.level)).padStart(2, "0")}.${tenBit ? "10" : "08"}`;
    }
    case "aac":
      return c.profile === "HE-AAC" ? "mp4a.40.5" : c.profile === "HE-AACv2" ? "mp4a.40.29" : "mp4a.40.2";
    case "mp3":
      return "mp4a.40.34";
    case "opus":
      return "Opus";
    default:
      return c.codec;
  }
}

/**
 * The codec string of a media playlist's stream, from its first segment (and init segment): read
 * from the first bytes where that is exact (codec-sniff.ts), else ffprobe's. `base` is the playlist's folder.
 */
export async function playlistCodecString(base: string, media: MediaPlaylist, signal: AbortSignal): Promise<string> {
  const first = path.join(base, media.segments[0]!.uri);
  const init = media.init ? path.join(base, media.init) : undefined;
  const codec = (await sniffStreamCodec(init ?? first)) ?? (await probeStreamCodec(init ? `concat:${init}|${first}` : first, signal));
  return codecString(codec, init !== undefined);
}
