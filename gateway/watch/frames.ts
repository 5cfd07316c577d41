// One Watch update, encoded once per wire format and framed once: every stream of the entity that
// speaks the format is written the same bytes. The bytes are those Connect's per-stream path
// writes (its binary serialization, its gzip above compressMinBytes; the JSON bridge's spec JSON).
import { fromBinary, toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import { gzipSync } from "node:zlib";
import { writeJson } from "../../wire/codec.js";
import { boundedGzip } from "../compression.js";
import { envelope } from "../wire-errors.js";

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
    this.binary ??= toBinary(this.schema, this.message);
    const binary = this.binary;
    // JSON as the bridge writes it: from the binary message, so what it drops is dropped here too.
    if (format === "json") return envelope(0, new TextEncoder().encode(writeJson(this.schema, fromBinary(this.schema, binary))));
    if (format === "proto-gzip" && binary.byteLength >= COMPRESS_MIN_BYTES) return envelope(1, gzipSync(binary));
    return envelope(0, binary);
  }
}
