// Request count and latency of every RPC by method and code, taken around each universal handler:
// every call passes here once, whatever the host adapter or protocol, including calls refused before
// any interceptor runs (a body that does not parse, a limit). The code is read from the answer.
import { ConnectError } from "@connectrpc/connect";
import { readAllBytes, type UniversalHandler, type UniversalServerRequest, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeFromHttpStatus, codeFromString, codeToString, endStreamFlag, endStreamFromJson } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse } from "@connectrpc/connect/protocol-grpc-web";
import { gunzipSync } from "node:zlib";
import { recordRpc } from "../src/metrics.js";
import { isPushBody, type PushBody } from "../src/urgent-body.js";
import { COMPRESSED, endsWithoutError, once } from "./wire-errors.js";
import { wrapHandler } from "./handler.js";
import { rpcSpan } from "./rpc-trace.js";

/** The last frame of a chunk of whole frames (the bridge and the error shaping yield one per chunk, a Watch its last message and end in one). */
function lastFrame(chunk: Uint8Array): Uint8Array | undefined {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  let at = 0;
  for (;;) {
    if (chunk.length - at < 5) return undefined;
    const next = at + 5 + view.getUint32(at + 1);
    if (next === chunk.length) return chunk.subarray(at);
    if (next > chunk.length) return undefined;
    at = next;
  }
}

/** The code an enveloped stream ended with, from its last frame. */
function endCode(chunk: Uint8Array | undefined, grpcWeb: boolean): string {
  const last = chunk && lastFrame(chunk);
  if (!last) return "unknown";
  const flags = last[0]!;
  if (!(flags & (grpcWeb ? trailerFlag : endStreamFlag))) return "unknown";
  try {
    const data = flags & COMPRESSED ? gunzipSync(last.subarray(5)) : last.subarray(5);
    if (grpcWeb) {
      const status = Number(trailerParse(data).get("grpc-status") ?? NaN);
      return status === 0 ? "ok" : Number.isInteger(status) ? codeToString(status) : "unknown";
    }
    if (endsWithoutError(data)) return "ok";
    const error = endStreamFromJson(data).error;
    return error ? codeToString(error.code) : "ok";
  } catch {
    return "unknown";
  }
}

/** The code of a Connect unary error body ({"code": "not_found", ...}); from the HTTP status when it has none. */
function unaryErrorCode(bytes: Uint8Array, status: number): string {
  try {
    const code = (JSON.parse(new TextDecoder().decode(bytes)) as { code?: unknown }).code;
    if (typeof code === "string" && codeFromString(code) !== undefined) return code;
  } catch {
    /* not JSON */
  }
  return codeToString(codeFromHttpStatus(status));
}

async function* observed(body: AsyncIterable<Uint8Array>, grpcWeb: boolean, done: (code: string) => void): AsyncIterable<Uint8Array> {
  let last: Uint8Array | undefined;
  let code = "canceled"; // the host stopped reading: the client went away
  try {
    for await (const chunk of body) {
      last = chunk;
      yield chunk;
    }
    code = endCode(last, grpcWeb);
  } catch (e) {
    code = codeToString(ConnectError.from(e).code);
    throw e;
  } finally {
    done(code);
  }
}

/** A pushing body (a Watch), counted when it ends: by its last chunk, pushed or iterated; canceled when the client left. */
function observedPush(body: PushBody, grpcWeb: boolean, done: (code: string) => void): PushBody {
  let last: Uint8Array | undefined;
  let counted = false;
  const count = (code: string) => {
    if (!counted) ((counted = true), done(code));
  };
  async function* iterated(): AsyncGenerator<Uint8Array> {
    let read = false;
    try {
      for await (const chunk of body) {
        last = chunk;
        yield chunk;
      }
      read = true;
    } catch (e) {
      count(codeToString(ConnectError.from(e).code));
      throw e;
    } finally {
      if (!read) count("canceled"); // the host stopped reading: the client went away
    }
  }
  return {
    urgent: body.urgent,
    [Symbol.asyncIterator]: () => iterated(),
    push(sink, signal) {
      const settle = () => count(signal.aborted ? "canceled" : endCode(last, grpcWeb));
      const pushed = body.push({ write: sink.write, drained: sink.drained, end: (chunk) => ((last = chunk), sink.end(chunk)) }, signal);
      if (!pushed) {
        settle();
        return undefined;
      }
      return pushed.finally(settle);
    },
  };
}

/** The handler, counted: a unary answer when it is ready, a stream (Connect or gRPC-web framing) when its body ends. */
export function withRpcMetrics(handler: UniversalHandler): UniversalHandler {
  const method = `${handler.service.name}/${handler.method.name}`;
  const fn = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const started = performance.now();
    // The call's span (tracing on) ends with the same code the metrics count.
    const span = rpcSpan(handler, req);
    const done = (code: string) => {
      recordRpc(method, code, (performance.now() - started) / 1000);
      span?.end(code);
    };
    let res: UniversalServerResponse;
    try {
      res = await (span ? span.run(() => handler(req)) : handler(req));
    } catch (e) {
      done(codeToString(ConnectError.from(e).code));
      throw e;
    }
    const contentType = res.header?.get("content-type") ?? "";
    const body = res.body as AsyncIterable<Uint8Array> | undefined;
    if (body && /^application\/(connect\+|grpc-web)/.test(contentType)) {
      const grpcWeb = contentType.startsWith("application/grpc-web");
      return { ...res, body: isPushBody(body) ? observedPush(body, grpcWeb, done) : observed(body, grpcWeb, done) };
    }
    if (res.status === 200) {
      done("ok");
      return res;
    }
    // A Connect unary error: a small JSON body, never compressed.
    if (!body || res.header?.has("content-encoding")) {
      done(codeToString(codeFromHttpStatus(res.status)));
      return res;
    }
    const bytes = await readAllBytes(body, Number.MAX_SAFE_INTEGER);
    done(unaryErrorCode(bytes, res.status));
    return { ...res, body: once(bytes) };
  };
  return wrapHandler(handler, fn);
}
