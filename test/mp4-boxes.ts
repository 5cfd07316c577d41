// A small ISO-BMFF reader for tests of protected output: the box tree (containers, protected
// sample entries), and the common-encryption boxes read out: tenc, pssh, schm, avcC.
import { readFileSync } from "node:fs";

export interface Box {
  type: string;
  /** The whole box, header included. */
  bytes: Buffer;
  /** Offset of the payload in bytes (after the size, type and any 64-bit size). */
  headerSize: number;
  children: Box[];
}

/** Boxes made only of boxes. */
const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "stbl", "mvex", "edts", "dinf", "moof", "traf", "sinf", "schi"]);
/** Bytes before the child boxes, after the header: stsd's version, flags and entry count; a sample entry's fixed fields. */
const SKIP: Record<string, number> = {
  stsd: 8,
  // Visual sample entry: 6 reserved, data reference index, then 70 bytes of visual fields.
  encv: 78,
  avc1: 78,
  hvc1: 78,
  hev1: 78,
  // Audio sample entry: 6 reserved, data reference index, then 20 bytes of audio fields.
  enca: 28,
  mp4a: 28,
};

/** The boxes in `buf`, containers opened; a truncated box ends the list. */
export function readBoxes(buf: Buffer): Box[] {
  const boxes: Box[] = [];
  let at = 0;
  while (at + 8 <= buf.length) {
    let size = buf.readUInt32BE(at);
    const type = buf.toString("latin1", at + 4, at + 8);
    let headerSize = 8;
    if (size === 1) {
      size = Number(buf.readBigUInt64BE(at + 8));
      headerSize = 16;
    } else if (size === 0) size = buf.length - at;
    if (size < headerSize || at + size > buf.length) break;
    const bytes = buf.subarray(at, at + size);
    const skip = CONTAINERS.has(type) ? 0 : SKIP[type];
    boxes.push({ type, bytes, headerSize, children: skip === undefined ? [] : readBoxes(bytes.subarray(headerSize + skip)) });
    at += size;
  }
  return boxes;
}

export const readBoxFile = (file: string) => readBoxes(readFileSync(file));

/** Every box at a path of types below `boxes` ("moov/trak/mdia/minf/stbl/stsd/encv/sinf/schi/tenc"); "*" matches any type. */
export function findBoxes(boxes: readonly Box[], path: string): Box[] {
  const [first, ...rest] = path.split("/");
  const here = boxes.filter((b) => first === "*" || b.type === first);
  return rest.length === 0 ? here : here.flatMap((b) => findBoxes(b.children, rest.join("/")));
}

/** The payload of a box. */
const payload = (b: Box) => b.bytes.subarray(b.headerSize);
const hex = (b: Buffer) => b.toString("hex");

export interface Tenc {
  /** Default key ID, hex. */
  kid: string;
  isProtected: boolean;
  /** 0 with cbcs: every sample uses the constant IV. */
  perSampleIvSize: number;
  /** cbcs: the constant IV, hex; "" when the samples carry their own. */
  constantIv: string;
  /** Pattern encryption (version 1): encrypted and skipped 16-byte blocks. */
  cryptByteBlock: number;
  skipByteBlock: number;
}

export function readTenc(b: Box): Tenc {
  const p = payload(b);
  const version = p[0]!;
  const pattern = version > 0 ? p[5]! : 0;
  const isProtected = p[6] === 1;
  const perSampleIvSize = p[7]!;
  const kid = hex(p.subarray(8, 24));
  const constantIv = isProtected && perSampleIvSize === 0 ? hex(p.subarray(25, 25 + p[24]!)) : "";
  return { kid, isProtected, perSampleIvSize, constantIv, cryptByteBlock: pattern >> 4, skipByteBlock: pattern & 0x0f };
}

export interface Pssh {
  /** System ID as a UUID: 1077efec-c0b2-4d02-ace3-3c1e52e2fb4b. */
  systemId: string;
  /** Key IDs of a version 1 box, hex. */
  kids: string[];
}

export function readPssh(b: Box): Pssh {
  const p = payload(b);
  const id = hex(p.subarray(4, 20));
  const systemId = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
  const count = p[0]! > 0 ? p.readUInt32BE(20) : 0;
  const kids = Array.from({ length: count }, (_, i) => hex(p.subarray(24 + 16 * i, 40 + 16 * i)));
  return { systemId, kids };
}

/** schm's scheme type: "cenc", "cbcs". */
export const readSchm = (b: Box) => payload(b).toString("latin1", 4, 8);

/** frma's original format: the sample entry a protected one stands for ("avc1", "mp4a"). */
export const readFrma = (b: Box) => payload(b).toString("latin1", 0, 4);

/** The sample count of a trun or senc (both full boxes that start with it). */
export const sampleCount = (b: Box) => payload(b).readUInt32BE(4);

/** An avcC's RFC 6381 codec string: avc1.PPCCLL. */
export const avcCodecString = (b: Box) => `avc1.${hex(payload(b).subarray(1, 4)).toUpperCase()}`;

/** The sample entry of an init segment's first track (encv, enca, avc1, ...). */
export const sampleEntry = (init: readonly Box[]) => findBoxes(init, "moov/trak/mdia/minf/stbl/stsd/*")[0];
