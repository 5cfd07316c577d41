// I-frame playlists (RFC 8216 4.3.3.6, EXT-X-I-FRAMES-ONLY) for trick play and scrubbing: one per
// video media playlist, written beside it from the segments it lists. Each entry is a byte range of
// a segment that holds one key frame and what a player needs to decode it alone:
//   ts    the PAT and PMT ffmpeg writes just before every key frame, then the key frame's packets
//         up to the next video PES (audio packets between them come along);
//   fMP4  the fragment's moof (with its sample encryption boxes when cbcs or cenc encrypted it),
//         then the fragment's samples up to the end of the key frame; the init segment comes from
//         the media playlist's EXT-X-MAP, copied.
// EXT-X-KEY lines are copied from the media playlist, so sample-encrypted I-frames decrypt with the
// stream's keys. aes_128 encrypts whole segments: a range inside one cannot be decrypted alone, and
// the specification check refuses I-frame playlists with it.
import { open, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { MediaError } from "../media-errors.js";
import { iframePlaylistOf } from "../planners/master.js";

const TS_PACKET = 188;
/** PES stream types of video the ts muxer writes: H.264, HEVC. */
const TS_VIDEO_TYPES = new Set([0x1b, 0x24]);

/** A key frame found in a segment: its byte range (from the segment's first byte) and presentation time. */
export interface KeyFrame {
  offset: number;
  length: number;
  /** Seconds on the stream's timeline. */
  time: number;
}

/** One media segment of a playlist: a whole file, or a byte range of one. */
interface Segment {
  uri: string;
  offset: number;
  length?: number;
  duration: number;
  /** EXT-X-KEY lines in force for this segment. */
  keys: string[];
}

interface Media {
  version: number;
  targetDuration: number;
  /** The EXT-X-MAP line, verbatim. */
  map?: string;
  mapUri?: string;
  mapRange?: { offset: number; length: number };
  segments: Segment[];
}

function parseByteRange(value: string, next: number): { offset: number; length: number } {
  const [length, offset] = value.split("@");
  return { length: Number.parseInt(length!, 10), offset: offset !== undefined ? Number.parseInt(offset, 10) : next };
}

/** The media playlist's segments with their byte ranges and keys, its init map and target duration. */
export function parseSegments(text: string): Media {
  const media: Media = { version: 1, targetDuration: 0, segments: [] };
  let keys: string[] = [];
  let keysClosed = false;
  let duration = 0;
  let range: { offset: number; length: number } | undefined;
  const nextOffset = new Map<string, number>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "") continue;
    if (line.startsWith("#EXT-X-VERSION:")) media.version = Number(line.slice(15)) || 1;
    else if (line.startsWith("#EXT-X-TARGETDURATION:")) media.targetDuration = Number(line.slice(22)) || 0;
    else if (line.startsWith("#EXT-X-MAP:")) {
      media.map ??= line;
      media.mapUri ??= /URI="([^"]+)"/.exec(line)?.[1];
      const r = /BYTERANGE="([^"]+)"/.exec(line)?.[1];
      if (r && !media.mapRange) media.mapRange = parseByteRange(r, 0);
    } else if (line.startsWith("#EXT-X-KEY:")) {
      // A run of key lines (one per key format) replaces the keys in force.
      if (keysClosed) keys = [];
      keys = [...keys, line];
      keysClosed = false;
    } else if (line.startsWith("#EXTINF:")) duration = Number.parseFloat(line.slice(8));
    else if (line.startsWith("#EXT-X-BYTERANGE:")) range = { ...parseByteRange(line.slice(17), -1) };
    else if (!line.startsWith("#")) {
      keysClosed = true;
      const offset = range ? (range.offset >= 0 ? range.offset : (nextOffset.get(line) ?? 0)) : 0;
      media.segments.push({ uri: line, offset, ...(range ? { length: range.length } : {}), duration, keys });
      if (range) nextOffset.set(line, offset + range.length);
      duration = 0;
      range = undefined;
    }
  }
  return media;
}

// ───────────────────────────── MPEG-TS ─────────────────────────────

/**
 * Key frames of a ts segment: video PES starts flagged random access (ffmpeg flags every key
 * frame), each from the PSI packets just before it to the next video PES start.
 */
export function tsKeyFrames(bytes: Uint8Array): KeyFrame[] {
  if (bytes.length < TS_PACKET || bytes[0] !== 0x47) throw new MediaError("encode_failed", "a ts segment does not start with a sync byte");
  let pmtPid: number | undefined;
  let videoPid: number | undefined;
  const psi = new Set<number>([0x0000, 0x0011]);
  const frames: { start: number; pes: number; pts: number }[] = [];
  const pesStarts: number[] = [];
  let lastNonPsi = -1;
  for (let at = 0; at + TS_PACKET <= bytes.length; at += TS_PACKET) {
    if (bytes[at] !== 0x47) throw new MediaError("encode_failed", `a ts segment lost sync at byte ${at}`);
    const pid = ((bytes[at + 1]! & 0x1f) << 8) | bytes[at + 2]!;
    const unitStart = (bytes[at + 1]! & 0x40) !== 0;
    const control = (bytes[at + 3]! >> 4) & 3;
    const adaptation = (control & 2) !== 0 ? bytes[at + 4]! : -1;
    const payload = (control & 1) === 0 ? at + TS_PACKET : at + 4 + (adaptation >= 0 ? 1 + adaptation : 0);
    const randomAccess = adaptation > 0 && (bytes[at + 5]! & 0x40) !== 0;
    if (pid === 0 && unitStart && pmtPid === undefined) {
      const table = payload + 1 + bytes[payload]!;
      const sectionEnd = table + 3 + (((bytes[table + 1]! & 0x0f) << 8) | bytes[table + 2]!) - 4;
      // The first program's PMT PID (program 0 is the network PID).
      for (let p = table + 8; p + 4 <= sectionEnd; p += 4) {
        if (((bytes[p]! << 8) | bytes[p + 1]!) !== 0) {
          pmtPid = ((bytes[p + 2]! & 0x1f) << 8) | bytes[p + 3]!;
          psi.add(pmtPid);
          break;
        }
      }
    } else if (pid === pmtPid && unitStart && videoPid === undefined) {
      const table = payload + 1 + bytes[payload]!;
      const sectionEnd = table + 3 + (((bytes[table + 1]! & 0x0f) << 8) | bytes[table + 2]!) - 4;
      for (let p = table + 12 + (((bytes[table + 10]! & 0x0f) << 8) | bytes[table + 11]!); p + 5 <= sectionEnd;) {
        if (TS_VIDEO_TYPES.has(bytes[p]!)) {
          videoPid = ((bytes[p + 1]! & 0x1f) << 8) | bytes[p + 2]!;
          break;
        }
        p += 5 + (((bytes[p + 3]! & 0x0f) << 8) | bytes[p + 4]!);
      }
    } else if (pid === videoPid && unitStart) {
      pesStarts.push(at);
      if (randomAccess) {
        // The PSI ffmpeg writes right before a key frame belongs to its range: a player, or ffprobe, needs the PMT.
        let start = at;
        while (start - TS_PACKET > lastNonPsi && psi.has(((bytes[start - TS_PACKET + 1]! & 0x1f) << 8) | bytes[start - TS_PACKET + 2]!)) start -= TS_PACKET;
        frames.push({ start, pes: at, pts: pesPts(bytes, payload) });
      }
    }
    if (!psi.has(pid)) lastNonPsi = at;
  }
  if (videoPid === undefined) throw new MediaError("encode_failed", "a ts segment has no H.264 or HEVC stream");
  // A key frame's packets end where the next video PES starts.
  return frames.map((f) => {
    const end = pesStarts.find((at) => at > f.pes) ?? bytes.length - (bytes.length % TS_PACKET);
    return { offset: f.start, length: end - f.start, time: f.pts / 90_000 };
  });
}

/** The PTS of a PES whose header starts at `at`, in 90 kHz ticks. */
function pesPts(bytes: Uint8Array, at: number): number {
  if (bytes[at] !== 0 || bytes[at + 1] !== 0 || bytes[at + 2] !== 1 || (bytes[at + 7]! & 0x80) === 0)
    throw new MediaError("encode_failed", "a ts key frame has no PES header with a PTS");
  const p = at + 9;
  return (bytes[p]! & 0x0e) * 2 ** 29 + bytes[p + 1]! * 2 ** 22 + ((bytes[p + 2]! & 0xfe) << 14) + bytes[p + 3]! * 2 ** 7 + ((bytes[p + 4]! & 0xfe) >> 1);
}
// ───────────────────────────── fMP4 ─────────────────────────────

interface Box {
  type: string;
  start: number;
  /** Where the box's content starts (after its header). */
  body: number;
  end: number;
}

function* boxes(bytes: Uint8Array, from: number, to: number): Generator<Box> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = from; at + 8 <= to;) {
    let size = view.getUint32(at);
    let body = at + 8;
    if (size === 1) {
      size = Number(view.getBigUint64(at + 8));
      body += 8;
    } else if (size === 0) size = to - at;
    if (size < body - at || at + size > to) return;
    yield { type: String.fromCharCode(bytes[at + 4]!, bytes[at + 5]!, bytes[at + 6]!, bytes[at + 7]!), start: at, body, end: at + size };
    at += size;
  }
}

const child = (bytes: Uint8Array, parent: Box, type: string) => [...boxes(bytes, parent.body, parent.end)].find((b) => b.type === type);

/** The init segment's video track: its ID, timescale and default sample flags (trex). */
export interface VideoTrack {
  id: number;
  timescale: number;
  defaultFlags: number;
}

/** The first video track of an fMP4 init segment. */
export function initVideoTrack(bytes: Uint8Array): VideoTrack {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const moov = [...boxes(bytes, 0, bytes.length)].find((b) => b.type === "moov");
  if (!moov) throw new MediaError("encode_failed", "an fMP4 init segment has no moov");
  for (const trak of boxes(bytes, moov.body, moov.end)) {
    if (trak.type !== "trak") continue;
    const mdia = child(bytes, trak, "mdia");
    const hdlr = mdia && child(bytes, mdia, "hdlr");
    const mdhd = mdia && child(bytes, mdia, "mdhd");
    const tkhd = child(bytes, trak, "tkhd");
    if (!hdlr || !mdhd || !tkhd || String.fromCharCode(...bytes.subarray(hdlr.body + 8, hdlr.body + 12)) !== "vide") continue;
    const id = view.getUint32(tkhd.body + (bytes[tkhd.body] === 1 ? 20 : 12));
    const timescale = view.getUint32(mdhd.body + (bytes[mdhd.body] === 1 ? 20 : 12));
    const mvex = child(bytes, moov, "mvex");
    const trex = mvex ? [...boxes(bytes, mvex.body, mvex.end)].find((b) => b.type === "trex" && view.getUint32(b.body + 4) === id) : undefined;
    return { id, timescale, defaultFlags: trex ? view.getUint32(trex.body + 20) : 0 };
  }
  throw new MediaError("encode_failed", "an fMP4 init segment has no video track");
}

/** A sample that depends on no other: sample_is_non_sync_sample clear. */
const isSync = (flags: number) => (flags & 0x0001_0000) === 0;

/**
 * Key frames of an fMP4 segment: each fragment's sync samples of the video track, each from the
 * fragment's moof to the sample's last byte. Times from tfdt and the sample durations and offsets.
 */
export function fmp4KeyFrames(bytes: Uint8Array, track: VideoTrack): KeyFrame[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames: KeyFrame[] = [];
  for (const moof of boxes(bytes, 0, bytes.length)) {
    if (moof.type !== "moof") continue;
    for (const traf of boxes(bytes, moof.body, moof.end)) {
      if (traf.type !== "traf") continue;
      const tfhd = child(bytes, traf, "tfhd");
      if (!tfhd || view.getUint32(tfhd.body + 4) !== track.id) continue;
      const tfhdFlags = view.getUint32(tfhd.body) & 0xffffff;
      let at = tfhd.body + 8;
      // Only offsets from the moof (default-base-is-moof, or no base at all in a single-track fragment) are read here.
      if (tfhdFlags & 0x01) throw new MediaError("encode_failed", "an fMP4 fragment with an explicit base data offset");
      if (tfhdFlags & 0x02) at += 4;
      const defaultDuration = tfhdFlags & 0x08 ? view.getUint32(at) : 0;
      if (tfhdFlags & 0x08) at += 4;
      const defaultSize = tfhdFlags & 0x10 ? view.getUint32(at) : 0;
      if (tfhdFlags & 0x10) at += 4;
      const defaultFlags = tfhdFlags & 0x20 ? view.getUint32(at) : track.defaultFlags;
      const tfdt = child(bytes, traf, "tfdt");
      let decodeTime = tfdt ? (bytes[tfdt.body] === 1 ? Number(view.getBigUint64(tfdt.body + 4)) : view.getUint32(tfdt.body + 4)) : 0;
      for (const trun of boxes(bytes, traf.body, traf.end)) {
        if (trun.type !== "trun") continue;
        const version = bytes[trun.body]!;
        const flags = view.getUint32(trun.body) & 0xffffff;
        const count = view.getUint32(trun.body + 4);
        let p = trun.body + 8;
        let dataAt = moof.start;
        if (flags & 0x01) {
          dataAt = moof.start + view.getInt32(p);
          p += 4;
        }
        let firstFlags: number | undefined;
        if (flags & 0x04) {
          firstFlags = view.getUint32(p);
          p += 4;
        }
        for (let i = 0; i < count; i++) {
          const duration = flags & 0x100 ? view.getUint32(p) : defaultDuration;
          if (flags & 0x100) p += 4;
          const size = flags & 0x200 ? view.getUint32(p) : defaultSize;
          if (flags & 0x200) p += 4;
          let sampleFlags = i === 0 && firstFlags !== undefined ? firstFlags : defaultFlags;
          if (flags & 0x400) {
            sampleFlags = view.getUint32(p);
            p += 4;
          }
          let compositionOffset = 0;
          if (flags & 0x800) {
            compositionOffset = version === 0 ? view.getUint32(p) : view.getInt32(p);
            p += 4;
          }
          if (isSync(sampleFlags))
            frames.push({ offset: moof.start, length: dataAt + size - moof.start, time: (decodeTime + compositionOffset) / track.timescale });
          dataAt += size;
          decodeTime += duration;
        }
      }
    }
  }
  return frames;
}

// ───────────────────────────── the playlist ─────────────────────────────

/** Peak and average bits per second of an I-frame playlist's ranges (RFC 8216 BANDWIDTH, AVERAGE-BANDWIDTH). */
export interface IFrameRates {
  peak: number;
  average: number;
}

async function readRange(file: string, offset: number, length: number | undefined): Promise<Uint8Array> {
  if (length === undefined && offset === 0) return readFile(file);
  const handle = await open(file, "r");
  try {
    const size = length ?? (await handle.stat()).size - offset;
    const buffer = Buffer.alloc(size);
    const { bytesRead } = await handle.read(buffer, 0, size, offset);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

const formatDuration = (seconds: number) => seconds.toFixed(6).replace(/\.?0+$/, "");

/**
 * Writes the I-frame playlist of a video media playlist (`playlist` relative to `dir`) beside it
 * and returns its bit rates. Every key frame of every segment is listed, with its duration up to
 * the next (the last, up to the end of the stream).
 */
export async function writeIFramePlaylist(dir: string, playlist: string): Promise<IFrameRates> {
  const file = path.join(dir, playlist);
  const base = path.dirname(file);
  const media = parseSegments(await readFile(file, "utf8"));
  if (media.segments.length === 0) throw new MediaError("encode_failed", `${playlist} lists no segments`);
  const track = media.mapUri ? initVideoTrack(await readRange(path.join(base, media.mapUri), media.mapRange?.offset ?? 0, media.mapRange?.length)) : undefined;
  const entries: { segment: Segment; frame: KeyFrame }[] = [];
  let end = 0;
  let first: number | undefined;
  for (const segment of media.segments) {
    const bytes = await readRange(path.join(base, segment.uri), segment.offset, segment.length);
    const frames = track ? fmp4KeyFrames(bytes, track) : tsKeyFrames(bytes);
    if (frames.length === 0) throw new MediaError("encode_failed", `${playlist}: ${segment.uri} has no key frame`);
    first ??= frames[0]!.time;
    end += segment.duration;
    for (const frame of frames) entries.push({ segment, frame: { ...frame, offset: segment.offset + frame.offset } });
  }
  const streamEnd = first! + end;
  const lines: string[] = [];
  let keys: string[] = [];
  let peak = 0;
  let bits = 0;
  let longest = 0;
  entries.forEach(({ segment, frame }, i) => {
    const duration = Math.max((entries[i + 1]?.frame.time ?? streamEnd) - frame.time, 0.001);
    if (segment.keys !== keys) {
      keys = segment.keys;
      lines.push(...keys);
    }
    lines.push(`#EXTINF:${formatDuration(duration)},`, `#EXT-X-BYTERANGE:${frame.length}@${frame.offset}`, segment.uri);
    peak = Math.max(peak, (frame.length * 8) / duration);
    bits += frame.length * 8;
    longest = Math.max(longest, duration);
  });
  const head = [
    "#EXTM3U",
    // EXT-X-I-FRAMES-ONLY needs version 4, and beside EXT-X-MAP version 5.
    `#EXT-X-VERSION:${Math.max(media.version, media.map ? 5 : 4)}`,
    `#EXT-X-TARGETDURATION:${Math.max(media.targetDuration, Math.ceil(longest))}`,
    "#EXT-X-MEDIA-SEQUENCE:0",
    "#EXT-X-PLAYLIST-TYPE:VOD",
    "#EXT-X-I-FRAMES-ONLY",
    ...(media.map ? [media.map] : []),
  ];
  await writeFile(path.join(dir, iframePlaylistOf(playlist)), `${[...head, ...lines, "#EXT-X-ENDLIST"].join("\n")}\n`);
  return { peak: Math.ceil(peak), average: Math.ceil(bits / Math.max(end, 0.001)) };
}
