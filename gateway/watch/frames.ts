// One Watch update, encoded once per wire format and framed once: every stream of the entity that
// speaks the format is written the same bytes. The bytes are those Connect's per-stream path
// writes (its binary serialization, its gzip above compressMinBytes; the JSON bridge's spec JSON).
import { fromBinary, toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { endStreamFlag, endStreamFromJson, endStreamToJson } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus, trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { gunzipSync, gzipSync } from "node:zlib";
import { writeJson } from "../../wire/codec.js";
import { boundedGzip } from "../compression.js";
import { COMPRESSED, envelope, lastFrameShaped } from "../wire-errors.js";

/** What a stream's messages look like on its wire: spec JSON (Connect or gRPC-web), binary, or binary gzipped when large. */
export type WireFormat = "json" | "proto" | "proto-gzip";

/** Messages at least this large go out gzipped when the caller accepts gzip (Connect's default compressMinBytes). */
export const COMPRESS_MIN_BYTES = 1024;

const STREAM_CONTENT_TYPE = /^application\/(connect\+|grpc-web)/i;

/**
 * The format of a stream's messages, read from its answer's headers (as Connect's handler, or the
 * JSON bridge in front of it, set them); undefined when the answer is not an enveloped stream.
 */
export function wireFormatOf(header: Headers | undefined): WireFormat | undefined {
  const contentType = header?.get("content-type") ?? "";
  if (!STREAM_CONTENT_TYPE.test(contentType)) return undefined;
  if (/\+json\b/i.test(contentType)) return "json";
  const encoding = header?.get(contentType.toLowerCase().startsWith("application/grpc-web") ? "grpc-encoding" : "connect-content-encoding");
  return encoding === boundedGzip.name ? "proto-gzip" : "proto";
}

/** Whether a stream's answer is gRPC-web (trailers end it) rather than Connect (an end-of-stream message). */
export const isGrpcWeb = (header: Headers | undefined): boolean => /^application\/grpc-web/i.test(header?.get("content-type") ?? "");

/** Whether a frame (one envelope) ends its call: Connect's end of stream, gRPC-web's trailers. */
export const isEndFrame = (frame: Uint8Array, grpcWeb: boolean): boolean =>
  frame.byteLength >= 5 && (frame[0]! & (grpcWeb ? trailerFlag : endStreamFlag)) !== 0;

/**
 * The end of a call whose stream failed after Connect's part of it ended well (`end`, its end frame):
 * the frame Connect's handler and the gateway's error shaping write when the service throws `error`,
 * with the trailers (the end-of-stream metadata) the call ended with.
 */
export function failedEnd(end: Uint8Array, error: ConnectError, grpcWeb: boolean, format: WireFormat): Uint8Array {
  const data = end.subarray(5);
  const plain = end[0]! & COMPRESSED ? gunzipSync(data) : data;
  let bytes: Uint8Array;
  if (grpcWeb) {
    const trailer = trailerParse(plain);
    setTrailerStatus(trailer, error);
    bytes = trailerSerialize(trailer);
  } else {
    bytes = new TextEncoder().encode(JSON.stringify(endStreamToJson(endStreamFromJson(plain).metadata, error, {})));
  }
  const flags = grpcWeb ? trailerFlag : endStreamFlag;
  const compressed = format === "proto-gzip" && bytes.byteLength >= COMPRESS_MIN_BYTES;
  const frame = compressed ? envelope(flags | COMPRESSED, gzipSync(bytes)) : envelope(flags, bytes);
  return lastFrameShaped(grpcWeb, frame[0]!, frame.subarray(5));
}

/** A message for many streams: its frames made on first use, once per format. */
export class SharedMessage<M extends Message = Message> {
  private binary: Uint8Array | undefined;
  private readonly frames = new Map<WireFormat, Uint8Array>();

  constructor(
    private readonly schema: DescMessage,
    readonly message: M,
  ) {}

  frame(format: WireFormat): Uint8Array {
    let frame = this.frames.get(format);
    if (frame === undefined) this.frames.set(format, (frame = this.encode(format)));
    return frame;
  }

  private encode(format: WireFormat): Uint8Array {
    if (format === "json") return jsonFrame(this.jsonText());
    this.binary ??= toBinary(this.schema, this.message);
    const binary = this.binary;
    if (format === "proto-gzip" && binary.byteLength >= COMPRESS_MIN_BYTES) return envelope(1, gzipSync(binary));
    return envelope(0, binary);
  }

  /**
   * The JSON the bridge writes, which it reads from Connect's binary message. The message's own JSON
   * is the same text, save for a string with a lone surrogate, which the binary message carries as
   * U+FFFD: JSON.stringify writes such a surrogate as an escape, and then the JSON is made as the
   * bridge makes it (an escape-like text in a string only costs that detour).
   */
  private jsonText(): string {
    const text = writeJson(this.schema, this.message);
    if (!LONE_SURROGATE_ESCAPE.test(text)) return text;
    this.binary ??= toBinary(this.schema, this.message);
    return writeJson(this.schema, fromBinary(this.schema, this.binary));
  }
}

/** How JSON.stringify writes a lone surrogate (`\udXXX`, X from 800 to fff); a backslash written as `\\` may look alike. */
const LONE_SURROGATE_ESCAPE = /\\ud[89a-f]/i;

/** An uncompressed envelope of UTF-8 text, written in one buffer. */
function jsonFrame(text: string): Uint8Array {
  const length = Buffer.byteLength(text);
  const frame = Buffer.allocUnsafe(5 + length);
  frame[0] = 0;
  frame.writeUInt32BE(length, 1);
  frame.write(text, 5, "utf8");
  return frame;
}
