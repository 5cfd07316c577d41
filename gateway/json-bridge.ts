// Puts the spec's JSON mapping in front of Connect's universal handlers: JSON requests are read
// with field-level violations and handed on as binary proto; binary answers go back as spec JSON.
// Binary callers pass straight through. Works for Connect unary, Connect streaming and gRPC-web.
import { fromBinary, toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext, type Interceptor, type MethodImplSpec } from "@connectrpc/connect";
import { errorToJsonBytes, codeToHttpStatus, endStreamToJson, endStreamFlag, parseTimeout } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus, trailerSerialize, trailerFlag } from "@connectrpc/connect/protocol-grpc-web";
import {
  compressionNegotiate,
  envelopeDecompress,
  invokeUnaryImplementation,
  readAllBytes,
  transformSplitEnvelope,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { apiError, invalid } from "../src/errors.js";
import { readJson, writeJson } from "../wire/codec.js";
import { boundedGzip, gunzipStream } from "./compression.js";
import { wrapHandler } from "./handler.js";
import { apiShaped, envelope, frames, lastFrameShaped, once, withApiErrors } from "./wire-errors.js";

/** The bridge's limits: the router's own, so JSON callers meet the same ones as binary callers. */
export interface BridgeLimits {
  /** Largest request message, after decompression (Connect's readMaxBytes). */
  readonly readMaxBytes: number;
  /** Longest Connect-Timeout-Ms accepted (Node timers hold at most 2^31-1 ms). */
  readonly maxTimeoutMs: number;
}

/** Answers smaller than this go out uncompressed (Connect's default compressMinBytes). */
const COMPRESS_MIN_BYTES = 1024;
const COMPRESSIONS = [boundedGzip];

type JsonKind = "unary" | "connect-stream" | "grpc-web";

function jsonKind(contentType: string): JsonKind | undefined {
  const ct = contentType.toLowerCase();
  if (ct.startsWith("application/json")) return "unary";
  if (ct.startsWith("application/connect+json")) return "connect-stream";
  if (ct.startsWith("application/grpc-web+json")) return "grpc-web";
  return undefined;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

function errorResponse(kind: JsonKind, error: ConnectError): UniversalServerResponse {
  if (kind === "unary") {
    return {
      status: codeToHttpStatus(error.code),
      header: new Headers({ "content-type": "application/json" }),
      body: once(errorToJsonBytes(error, {})),
    };
  }
  if (kind === "connect-stream") {
    const end = textEncoder.encode(JSON.stringify(endStreamToJson(new Headers(), error, {})));
    return {
      status: 200,
      header: new Headers({ "content-type": "application/connect+json" }),
      body: once(envelope(endStreamFlag, end)),
    };
  }
  const trailer = new Headers();
  setTrailerStatus(trailer, error);
  return {
    status: 200,
    header: new Headers({ "content-type": "application/grpc-web+json" }),
    body: once(envelope(trailerFlag, trailerSerialize(trailer))),
  };
}

function decodeRequest(input: DescMessage, text: string): Message | ConnectError {
  const read = readJson(input, text);
  return read.ok
    ? read.message
    : invalid(read.violations, `invalid request: ${read.violations.map((v) => `${v.field || "body"}: ${v.description}`).join("; ")}`);
}

/** A unary method's implementation and interceptors, for the direct JSON path. */
export interface DirectUnary {
  readonly spec: MethodImplSpec & { kind: "unary" };
  readonly interceptors: Interceptor[];
}

function compress(header: Headers, json: Uint8Array, gzip: boolean): Promise<Uint8Array> | Uint8Array {
  if (!gzip || json.length < COMPRESS_MIN_BYTES) return json;
  header.set("content-encoding", "gzip");
  return boundedGzip.compress(json);
}

/**
 * Unary JSON calls run the implementation directly, through the same interceptors, instead of
 * re-encoding to binary for Connect's protocol handler and back: the common call, half the work.
 */
async function callDirect(
  direct: DirectUnary,
  req: UniversalServerRequest,
  message: Message,
  timeoutMs: number | undefined,
  gzip: boolean,
): Promise<UniversalServerResponse> {
  const { method } = direct.spec;
  const service = method.parent;
  const context = createHandlerContext({
    service,
    method,
    protocolName: "connect",
    requestMethod: req.method,
    url: req.url,
    requestHeader: req.header,
    requestSignal: req.signal,
    contextValues: req.contextValues ?? createContextValues(),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
  const header = context.responseHeader;
  header.set("content-type", "application/json");
  try {
    const out = await invokeUnaryImplementation(direct.spec, context, message as never, direct.interceptors);
    context.responseTrailer.forEach((v, k) => header.set(`trailer-${k}`, v));
    const json = textEncoder.encode(writeJson(method.output, out as Message));
    return { status: 200, header, body: once(await compress(header, json, gzip)) };
  } catch (e) {
    const error = ConnectError.from(e);
    error.metadata.forEach((v, k) => header.set(k, v));
    return { status: codeToHttpStatus(error.code), header, body: once(errorToJsonBytes(error, {})) };
  } finally {
    // Ends the deadline's timer. Only then: an abort builds an error, and most calls set no deadline.
    if (timeoutMs !== undefined) context.abort();
  }
}

/** A unary JSON request's message: read within the limit, decompressed within the limit, decoded. */
async function readUnary(
  req: UniversalServerRequest,
  input: DescMessage,
  limits: BridgeLimits,
  request: (typeof COMPRESSIONS)[number] | null,
): Promise<Message> {
  const body = req.body as AsyncIterable<Uint8Array>;
  const bytes =
    request === null ? await readAllBytes(body, limits.readMaxBytes, req.header.get("content-length")) : await gunzipStream(body, limits.readMaxBytes);
  const decoded = decodeRequest(input, textDecoder.decode(bytes));
  if (decoded instanceof ConnectError) throw decoded;
  return decoded;
}

export function withSpecJson(inner: UniversalHandler, limits: BridgeLimits, direct?: DirectUnary): UniversalHandler {
  const { input, output } = inner.method;
  const unary = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    if (inner.method.methodKind !== "unary") {
      const error = apiError(Code.InvalidArgument, `${inner.method.name} is a server-streaming method: send application/connect+json (enveloped) or binary`);
      return { ...errorResponse("unary", error), status: 415 };
    }
    const compression = compressionNegotiate(COMPRESSIONS, req.header.get("content-encoding"), req.header.get("accept-encoding"), "accept-encoding");
    const timeout = parseTimeout(req.header.get("connect-timeout-ms"), limits.maxTimeoutMs);
    let message: Message;
    try {
      if (compression.error) throw compression.error;
      if (timeout.error) throw timeout.error;
      message = await readUnary(req, input, limits, compression.request);
    } catch (e) {
      const res = errorResponse("unary", apiShaped(ConnectError.from(e)));
      compression.error?.metadata.forEach((v, k) => res.header!.set(k, v));
      return res;
    }
    const gzip = compression.response !== null;
    if (direct && req.method === "POST") return callDirect(direct, req, message, timeout.timeoutMs, gzip);
    // Connect's own handler sees a binary call: headers describe the re-encoded body.
    const header = new Headers(req.header);
    for (const h of ["content-length", "content-encoding", "accept-encoding"]) header.delete(h);
    header.set("content-type", "application/proto");
    const res = await inner({ ...req, header, body: once(toBinary(input, message)) });
    if (res.status !== 200) return withApiErrors(res);
    const json = textEncoder.encode(writeJson(output, fromBinary(output, await readAllBytes(res.body as AsyncIterable<Uint8Array>, Number.MAX_SAFE_INTEGER))));
    const resHeader = new Headers(res.header);
    resHeader.set("content-type", "application/json");
    resHeader.delete("content-length"); // it measured the binary body
    return { ...res, header: resHeader, body: once(await compress(resHeader, json, gzip)) };
  };

  const enveloped = async (req: UniversalServerRequest, kind: "connect-stream" | "grpc-web"): Promise<UniversalServerResponse> => {
    // One request message (unary or server-streaming methods only are served), re-encoded to binary.
    const encodingHeader = kind === "grpc-web" ? "grpc-encoding" : "connect-content-encoding";
    const acceptHeader = kind === "grpc-web" ? "grpc-accept-encoding" : "connect-accept-encoding";
    const compression = compressionNegotiate(COMPRESSIONS, req.header.get(encodingHeader), req.header.get(acceptHeader), acceptHeader);
    const binaryFrames: Uint8Array[] = [];
    try {
      if (compression.error) throw compression.error;
      const split = transformSplitEnvelope(limits.readMaxBytes)(req.body as AsyncIterable<Uint8Array>);
      for await (const frame of split) {
        const { data } = await envelopeDecompress(frame, compression.request, limits.readMaxBytes);
        const decoded = decodeRequest(input, textDecoder.decode(data));
        if (decoded instanceof ConnectError) throw decoded;
        binaryFrames.push(envelope(0, toBinary(input, decoded)));
      }
    } catch (e) {
      return errorResponse(kind, apiShaped(ConnectError.from(e)));
    }
    const header = new Headers(req.header);
    header.delete("content-length");
    for (const h of ["connect-content-encoding", "connect-accept-encoding", "grpc-encoding", "grpc-accept-encoding"]) header.delete(h);
    header.set("content-type", kind === "grpc-web" ? "application/grpc-web+proto" : "application/connect+proto");
    const res = await inner({ ...req, header, body: once(binaryFrames.length === 1 ? binaryFrames[0]! : Buffer.concat(binaryFrames)) });
    const resHeader = new Headers(res.header);
    resHeader.set("content-type", kind === "grpc-web" ? "application/grpc-web+json" : "application/connect+json");
    resHeader.delete("content-length");
    const body = res.body;
    if (!body) return { ...res, header: resHeader };
    // Messages to spec JSON; the last frame (end of stream, trailers) with its error in the API's shape.
    async function* toJsonFrames(): AsyncIterable<Uint8Array> {
      for await (const frame of frames(body!)) {
        if (frame.flags === 0) yield envelope(0, textEncoder.encode(writeJson(output, fromBinary(output, frame.data))));
        else yield lastFrameShaped(kind === "grpc-web", frame.flags, frame.data);
      }
    }
    return { ...res, header: resHeader, body: toJsonFrames() };
  };

  const fn = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const kind = jsonKind(req.header.get("content-type") ?? "");
    if (kind === undefined) return withApiErrors(await inner(req));
    return kind === "unary" ? unary(req) : enveloped(req, kind);
  };
  return wrapHandler(inner, fn);
}
