// Puts the spec's JSON mapping in front of Connect's universal handlers: JSON requests are read
// with field-level violations and handed on as binary proto; binary answers go back as spec JSON.
// Binary callers pass straight through. Works for Connect unary, Connect streaming and gRPC-web.
import { gunzipSync, gzipSync } from "node:zlib";
import { fromBinary, toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext, type Interceptor, type MethodImplSpec } from "@connectrpc/connect";
import { errorToJsonBytes, codeToHttpStatus, endStreamToJson, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus, trailerSerialize, trailerFlag } from "@connectrpc/connect/protocol-grpc-web";
import { invokeUnaryImplementation, type UniversalHandler, type UniversalServerRequest, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { apiError, invalid } from "../src/errors.js";
import { readJson, writeJson } from "./codec.js";

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

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

export async function readAll(body: UniversalServerRequest["body"] | undefined): Promise<Uint8Array> {
  if (body === undefined || body === null) return new Uint8Array();
  if (body instanceof Uint8Array) return body;
  if (typeof body === "object" && Symbol.asyncIterator in body) {
    const chunks: Uint8Array[] = [];
    for await (const c of body as AsyncIterable<Uint8Array>) chunks.push(c);
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }
  return textEncoder.encode(JSON.stringify(body));
}

function envelope(flags: number, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + data.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, data.length);
  out.set(data, 5);
  return out;
}

/** Splits a byte stream into enveloped frames, across chunk boundaries. */
async function* frames(body: AsyncIterable<Uint8Array>): AsyncIterable<{ flags: number; data: Uint8Array }> {
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
  return read.ok ? read.message : invalid(read.violations, `invalid request: ${read.violations.map((v) => `${v.field || "body"}: ${v.description}`).join("; ")}`);
}

/** A unary method's implementation and interceptors, for the direct JSON path. */
export interface DirectUnary {
  readonly spec: MethodImplSpec & { kind: "unary" };
  readonly interceptors: Interceptor[];
}

/**
 * Unary JSON calls run the implementation directly, through the same interceptors, instead of
 * re-encoding to binary for Connect's protocol handler and back: the common call, half the work.
 */
async function callDirect(direct: DirectUnary, req: UniversalServerRequest, message: Message, acceptsGzip: boolean): Promise<UniversalServerResponse> {
  const { method } = direct.spec;
  const service = method.parent;
  const timeout = Number(req.header.get("connect-timeout-ms") ?? "");
  const context = createHandlerContext({
    service,
    method,
    protocolName: "connect",
    requestMethod: req.method,
    url: req.url,
    requestHeader: req.header,
    requestSignal: req.signal,
    contextValues: req.contextValues ?? createContextValues(),
    ...(Number.isFinite(timeout) && timeout > 0 ? { timeoutMs: timeout } : {}),
  });
  const header = context.responseHeader;
  header.set("content-type", "application/json");
  try {
    const out = await invokeUnaryImplementation(direct.spec, context, message as never, direct.interceptors);
    context.responseTrailer.forEach((v, k) => header.set(`trailer-${k}`, v));
    const json = textEncoder.encode(writeJson(method.output, out as Message));
    if (acceptsGzip && json.length > 1024) {
      header.set("content-encoding", "gzip");
      return { status: 200, header, body: once(gzipSync(json)) };
    }
    return { status: 200, header, body: once(json) };
  } catch (e) {
    const error = ConnectError.from(e);
    error.metadata.forEach((v, k) => header.set(k, v));
    return { status: codeToHttpStatus(error.code), header, body: once(errorToJsonBytes(error, {})) };
  }
}

export function withSpecJson(inner: UniversalHandler, direct?: DirectUnary): UniversalHandler {
  const { input, output } = inner.method;
  const fn = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const kind = jsonKind(req.header.get("content-type") ?? "");
    if (kind === undefined) return inner(req);
    let bytes = await readAll(req.body);
    if (kind === "unary" && inner.method.methodKind !== "unary") {
      const error = apiError(Code.InvalidArgument, `${inner.method.name} is a server-streaming method: send application/connect+json (enveloped) or binary`);
      return { ...errorResponse(kind, error), status: 415 };
    }
    if (kind === "unary") {
      const acceptsGzip = /\bgzip\b/.test(req.header.get("accept-encoding") ?? "");
      if ((req.header.get("content-encoding") ?? "").toLowerCase() === "gzip") bytes = gunzipSync(bytes);
      const decoded = decodeRequest(input, textDecoder.decode(bytes));
      if (decoded instanceof Error) return errorResponse(kind, decoded as ConnectError);
      if (direct && req.method === "POST") return callDirect(direct, req, decoded, acceptsGzip);
      // Connect's own handler sees a binary call: headers describe the re-encoded body.
      const header = new Headers(req.header);
      for (const h of ["content-length", "content-encoding", "accept-encoding"]) header.delete(h);
      header.set("content-type", "application/proto");
      const res = await inner({ ...req, header, body: once(toBinary(input, decoded as Message)) });
      if (res.status !== 200) return res;
      const json = textEncoder.encode(writeJson(output, fromBinary(output, await readAll(res.body))));
      const resHeader = new Headers(res.header);
      resHeader.set("content-type", "application/json");
      resHeader.delete("content-length"); // it measured the binary body
      if (acceptsGzip && json.length > 1024) {
        resHeader.set("content-encoding", "gzip");
        return { ...res, header: resHeader, body: once(gzipSync(json)) };
      }
      return { ...res, header: resHeader, body: once(json) };
    }
    // Enveloped: one request message (unary or server-streaming methods only are served).
    const header = new Headers(req.header);
    header.delete("content-length");
    const compressedIn = (header.get(kind === "grpc-web" ? "grpc-encoding" : "connect-content-encoding") ?? "") === "gzip";
    for (const h of ["connect-content-encoding", "connect-accept-encoding", "grpc-encoding", "grpc-accept-encoding"]) header.delete(h);
    header.set("content-type", kind === "grpc-web" ? "application/grpc-web+proto" : "application/connect+proto");
    const binaryFrames: Uint8Array[] = [];
    for await (const frame of frames(once(bytes))) {
      const data = frame.flags & 1 && compressedIn ? gunzipSync(frame.data) : frame.data;
      const decoded = decodeRequest(input, textDecoder.decode(data));
      if (decoded instanceof Error) return errorResponse(kind, decoded as ConnectError);
      binaryFrames.push(envelope(0, toBinary(input, decoded)));
    }
    const res = await inner({ ...req, header, body: once(binaryFrames.length === 1 ? binaryFrames[0]! : Buffer.concat(binaryFrames)) });
    const resHeader = new Headers(res.header);
    resHeader.set("content-type", kind === "grpc-web" ? "application/grpc-web+json" : "application/connect+json");
    resHeader.delete("content-length");
    const body = res.body;
    if (!body) return { ...res, header: resHeader };
    async function* toJsonFrames(): AsyncIterable<Uint8Array> {
      for await (const frame of frames(body!)) {
        if (frame.flags === 0) yield envelope(0, textEncoder.encode(writeJson(output, fromBinary(output, frame.data))));
        else yield envelope(frame.flags, frame.data);
      }
    }
    return { ...res, header: resHeader, body: toJsonFrames() };
  };
  return Object.assign(fn, {
    protocolNames: inner.protocolNames,
    service: inner.service,
    method: inner.method,
    requestPath: inner.requestPath,
    allowedMethods: inner.allowedMethods,
    supportedContentType: inner.supportedContentType,
  });
}
