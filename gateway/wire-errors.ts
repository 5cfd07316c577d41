// Errors raised by Connect's protocol layer, before any interceptor runs (a body that does not
// parse, a limit, an encoding), get the API's shape on every protocol: media.v1.ErrorDetails
// attached, and invalid_argument for a binary body that does not parse (connect-es calls that
// internal, though the caller sent it). Errors of our own services already have both and pass as is.
import { Code, ConnectError } from "@connectrpc/connect";
import { readAllBytes, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  endStreamFlag,
  endStreamFromJson,
  endStreamToJson,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { setTrailerStatus, trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { gunzipSync } from "node:zlib";
import { apiError } from "../src/errors.js";

/** The envelope flag of a compressed frame. */
export const COMPRESSED = 0b1;
const decoder = new TextDecoder();

/**
 * True when a Connect end-of-stream JSON is an object with no error: how every stream that went well
 * ends. Read here because Connect's `endStreamFromJson` builds an error (a stack trace) on each call.
 */
export function endsWithoutError(data: Uint8Array): boolean {
  try {
    const end = JSON.parse(decoder.decode(data)) as unknown;
    return typeof end === "object" && end !== null && !Array.isArray(end) && !("error" in end);
  } catch {
    return false;
  }
}

/** The error as the API answers it; the same object when it already is. */
export function apiShaped(error: ConnectError): ConnectError {
  const code = error.code === Code.Internal && error.rawMessage.startsWith("parse binary:") ? Code.InvalidArgument : error.code;
  if (code === error.code && error.details.length > 0) return error;
  return Object.assign(apiError(code, error.rawMessage), { metadata: error.metadata });
}

export function envelope(flags: number, data: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + data.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, data.length);
  out.set(data, 5);
  return out;
}

/** Splits a byte stream into enveloped frames, across chunk boundaries; each frame as soon as it is whole. */
export async function* frames(body: AsyncIterable<Uint8Array>): AsyncIterable<{ flags: number; data: Uint8Array }> {
  let buffer: Uint8Array = new Uint8Array();
  for await (const chunk of body) {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    while (buffer.length >= 5) {
      const length = new DataView(buffer.buffer, buffer.byteOffset).getUint32(1);
      if (buffer.length < 5 + length) break;
      yield { flags: buffer[0]!, data: buffer.subarray(5, 5 + length) };
      buffer = buffer.subarray(5 + length);
    }
  }
}

const fallback = new ConnectError("unreadable error", Code.Unknown);

/** An end-of-stream (Connect) or trailer (gRPC-web) frame with its error in the API's shape; other frames as they are. */
export function lastFrameShaped(grpcWeb: boolean, flags: number, data: Uint8Array): Uint8Array {
  if (!(flags & (grpcWeb ? trailerFlag : endStreamFlag))) return envelope(flags, data);
  const plain = flags & COMPRESSED ? gunzipSync(data) : data;
  const last = flags & ~COMPRESSED;
  if (grpcWeb) {
    const trailer = trailerParse(plain);
    const error = findTrailerError(trailer);
    const shaped = error && apiShaped(error);
    if (!shaped || shaped === error) return envelope(flags, data);
    for (const h of ["grpc-status", "grpc-message", "grpc-status-details-bin"]) trailer.delete(h);
    setTrailerStatus(trailer, shaped);
    return envelope(last, trailerSerialize(trailer));
  }
  if (endsWithoutError(plain)) return envelope(flags, data);
  const end = endStreamFromJson(plain);
  const shaped = end.error && apiShaped(end.error);
  if (!shaped || shaped === end.error) return envelope(flags, data);
  return envelope(last, new TextEncoder().encode(JSON.stringify(endStreamToJson(end.metadata, shaped, {}))));
}

/** The answer of Connect's handler, its errors in the API's shape; successes pass untouched. */
export async function withApiErrors(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  const contentType = res.header?.get("content-type") ?? "";
  const body = res.body as AsyncIterable<Uint8Array> | undefined;
  if (!body) return res;
  if (/^application\/(connect\+|grpc-web)/.test(contentType)) {
    const grpcWeb = contentType.startsWith("application/grpc-web");
    async function* shaped(): AsyncIterable<Uint8Array> {
      for await (const frame of frames(body!)) yield lastFrameShaped(grpcWeb, frame.flags, frame.data);
    }
    return { ...res, body: shaped() };
  }
  // A Connect unary error: a JSON body, never compressed, on a status other than 200.
  if (res.status === 200 || !contentType.startsWith("application/json") || res.header?.has("content-encoding")) return res;
  const bytes = await readAllBytes(body, Number.MAX_SAFE_INTEGER);
  const error = errorFromJsonBytes(bytes, undefined, fallback);
  const shaped = apiShaped(error);
  if (shaped === error) return { ...res, body: once(bytes) };
  const header = new Headers(res.header);
  header.delete("content-length"); // it measured the body replaced here
  return { ...res, status: codeToHttpStatus(shaped.code), header, body: once(errorToJsonBytes(shaped, {})) };
}

export async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
