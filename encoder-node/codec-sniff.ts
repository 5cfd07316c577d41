// A segment's codec as ffprobe would report it, read from its first bytes where that is simple and
// exact: H.264 (its sequence parameter set, in MPEG-TS or an fMP4 init segment's avcC) and AAC-LC in
// MPEG-TS (its ADTS header). The master of a growing stream waits for the codec strings of its first
// rung: under the load of the encodes, one ffprobe took about 0.4 s of the 2 s to playable. Anything
// else (another codec, an H.264 profile whose name needs more than these bytes) is undefined, and
// ffprobe answers. test/media/codec-sniff.test.ts holds the answers equal to ffprobe's.
import { open } from "node:fs/promises";
import type { StreamCodec } from "./probe.js";

const TS_PACKET = 188;
/** Enough of a segment for its first access unit's parameter sets, or an init segment's boxes. */
const HEAD_BYTES = 64 * 1024;

/** The codec of the first stream of a ts segment or of an fMP4 init segment, when it can be read exactly here. */
export async function sniffStreamCodec(file: string): Promise<StreamCodec | undefined> {
  const handle = await open(file, "r");
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    return sniffBytes(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

export function sniffBytes(bytes: Uint8Array): StreamCodec | undefined {
  if (bytes.length >= TS_PACKET && bytes[0] === 0x47 && (bytes.length < 2 * TS_PACKET || bytes[TS_PACKET] === 0x47)) return sniffTs(bytes);
  const avcC = findBox(bytes, "avcC");
  if (avcC !== undefined && avcC + 4 <= bytes.length) return h264(bytes[avcC + 1]!, bytes[avcC + 2]!, bytes[avcC + 3]!);
  return undefined;
}

/** H.264 by profile_idc, constraint flags and level_idc, named as libavcodec names it (ff_h264_get_profile). */
function h264(profileIdc: number, constraints: number, levelIdc: number): StreamCodec | undefined {
  const set1 = (constraints & 0x40) !== 0;
  const set3 = (constraints & 0x10) !== 0;
  // Level 1b is signalled by level_idc 11 with constraint_set3 in the Baseline, Main and Extended profiles.
  if (levelIdc === 11 && set3) return undefined;
  const name: Record<number, string | undefined> = {
    66: set1 ? "Constrained Baseline" : "Baseline",
    77: "Main",
    88: "Extended",
    100: "High",
    110: set3 ? undefined : "High 10",
    122: set3 ? undefined : "High 4:2:2",
    244: set3 ? undefined : "High 4:4:4 Predictive",
  };
  const profile = name[profileIdc];
  return profile === undefined || levelIdc === 0 ? undefined : { codec: "h264", profile, level: levelIdc, pixelFormat: "" };
}

/** The first elementary stream the PMT lists: H.264 (its SPS) or ADTS AAC (its header); else undefined. */
function sniffTs(bytes: Uint8Array): StreamCodec | undefined {
  let pmtPid: number | undefined;
  let stream: { pid: number; type: number } | undefined;
  const es: number[] = [];
  for (let at = 0; at + TS_PACKET <= bytes.length; at += TS_PACKET) {
    if (bytes[at] !== 0x47) return undefined;
    const pid = ((bytes[at + 1]! & 0x1f) << 8) | bytes[at + 2]!;
    const start = (bytes[at + 1]! & 0x40) !== 0;
    const control = (bytes[at + 3]! >> 4) & 0x3;
    if (!(control & 0x1)) continue;
    let payload = at + 4 + (control & 0x2 ? 1 + bytes[at + 4]! : 0);
    const end = at + TS_PACKET;
    if (payload >= end) continue;
    if (pid === 0 && start && pmtPid === undefined) {
      payload += 1 + bytes[payload]!; // pointer field
      // PAT: the first program with a number other than 0 (0 is the network PID).
      const sectionEnd = Math.min(end, payload + 3 + (((bytes[payload + 1]! & 0x0f) << 8) | bytes[payload + 2]!) - 4);
      for (let p = payload + 8; p + 4 <= sectionEnd; p += 4) {
        if (((bytes[p]! << 8) | bytes[p + 1]!) !== 0) {
          pmtPid = ((bytes[p + 2]! & 0x1f) << 8) | bytes[p + 3]!;
          break;
        }
      }
    } else if (pid === pmtPid && start && stream === undefined) {
      payload += 1 + bytes[payload]!;
      const sectionEnd = Math.min(end, payload + 3 + (((bytes[payload + 1]! & 0x0f) << 8) | bytes[payload + 2]!) - 4);
      const programInfo = ((bytes[payload + 10]! & 0x0f) << 8) | bytes[payload + 11]!;
      const p = payload + 12 + programInfo;
      if (p + 5 > sectionEnd) return undefined;
      stream = { type: bytes[p]!, pid: ((bytes[p + 1]! & 0x1f) << 8) | bytes[p + 2]! };
      if (stream.type !== 0x1b && stream.type !== 0x0f) return undefined;
    } else if (stream && pid === stream.pid) {
      if (start) {
        if (es.length > 0) break; // one PES is enough
        if (bytes[payload] !== 0 || bytes[payload + 1] !== 0 || bytes[payload + 2] !== 1) return undefined;
        payload += 9 + bytes[payload + 8]!;
      } else if (es.length === 0) continue;
      for (let p = payload; p < end; p++) es.push(bytes[p]!);
      if (es.length >= 1024) break;
    }
  }
  if (!stream || es.length === 0) return undefined;
  if (stream.type === 0x0f) {
    // ADTS: a sync word, then the profile (the audio object type less one); 1 is AAC-LC.
    if (es.length < 7 || es[0] !== 0xff || (es[1]! & 0xf0) !== 0xf0) return undefined;
    return ((es[2]! >> 6) & 0x3) === 1 ? { codec: "aac", profile: "LC", level: 0, pixelFormat: "" } : undefined;
  }
  // The first SPS (NAL type 7) after a start code: profile_idc, the constraint flags, level_idc.
  for (let p = 0; p + 6 < es.length; p++) {
    if (es[p] === 0 && es[p + 1] === 0 && es[p + 2] === 1 && (es[p + 3]! & 0x1f) === 7) return h264(es[p + 4]!, es[p + 5]!, es[p + 6]!);
  }
  return undefined;
}

/** The offset of a box's payload, searched through the top-level and the sample description's nesting by its type. */
function findBox(bytes: Uint8Array, type: string): number | undefined {
  const code = Buffer.from(type, "latin1");
  for (let p = 4; p + 4 <= bytes.length; p++) {
    if (bytes[p] === code[0] && bytes[p + 1] === code[1] && bytes[p + 2] === code[2] && bytes[p + 3] === code[3]) {
      const size = ((bytes[p - 4]! << 24) | (bytes[p - 3]! << 16) | (bytes[p - 2]! << 8) | bytes[p - 1]!) >>> 0;
      if (size >= 8 + 4 && p - 4 + size <= bytes.length && bytes[p + 4] === 1) return p + 4;
    }
  }
  return undefined;
}
