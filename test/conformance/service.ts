// connectrpc.conformance.v1.ConformanceService, the service the conformance runner calls. Follows
// connect-es's reference implementation (packages/connect-conformance/src/routes.ts and
// protocol.ts, Apache-2.0, The Connect Authors): request headers and the requests are echoed in
// a RequestInfo, response headers and trailers come from the response definition, errors carry
// the RequestInfo as a detail, delays are honored.
import { create, createRegistry } from "@bufbuild/protobuf";
import { anyPack, anyUnpack, type Any } from "@bufbuild/protobuf/wkt";
import { type Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  BidiStreamRequestSchema,
  ClientStreamRequestSchema,
  ConformancePayload_RequestInfoSchema,
  ConformancePayloadSchema,
  ConformanceService,
  HeaderSchema,
  IdempotentUnaryRequestSchema,
  ServerStreamRequestSchema,
  UnaryRequestSchema,
  type ConformancePayload_RequestInfo,
  type Error as ConformanceError,
  type Header,
  type StreamResponseDefinition,
  type UnaryResponseDefinition,
} from "./gen/connectrpc/conformance/v1/service_pb.js";

/** The request types packed into RequestInfo.requests, for the JSON codec's Any support. */
export const jsonRegistry = createRegistry(
  UnaryRequestSchema,
  ServerStreamRequestSchema,
  ClientStreamRequestSchema,
  BidiStreamRequestSchema,
  IdempotentUnaryRequestSchema,
);

const detailsRegistry = createRegistry(ConformancePayload_RequestInfoSchema);

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function toProtoHeaders(headers: Headers): Header[] {
  const out: Header[] = [];
  headers.forEach((value, name) => out.push(create(HeaderSchema, { name, value: [value] })));
  return out;
}

function appendHeaders(headers: Headers, from: readonly Header[]): void {
  for (const h of from) for (const v of h.value) headers.append(h.name, v);
}

function errorFromProto(err: ConformanceError): ConnectError {
  return new ConnectError(
    err.message ?? "",
    err.code as number as Code,
    undefined,
    err.details.map((d) => {
      const value = anyUnpack(d, detailsRegistry);
      if (value === undefined) throw new Error(`cannot unpack error detail ${d.typeUrl}`);
      return { desc: ConformancePayload_RequestInfoSchema, value: value as ConformancePayload_RequestInfo };
    }),
  );
}

function requestInfo(ctx: HandlerContext, requests: Any[]): ConformancePayload_RequestInfo {
  const timeoutMs = ctx.timeoutMs();
  return create(ConformancePayload_RequestInfoSchema, {
    requestHeaders: toProtoHeaders(ctx.requestHeader),
    requests,
    ...(timeoutMs !== undefined ? { timeoutMs: BigInt(timeoutMs) } : {}),
  });
}

async function unaryResponse(def: UnaryResponseDefinition | undefined, requests: Any[], ctx: HandlerContext) {
  appendHeaders(ctx.responseHeader, def?.responseHeaders ?? []);
  appendHeaders(ctx.responseTrailer, def?.responseTrailers ?? []);
  if (def?.response.case === "error") {
    def.response.value.details.push(anyPack(ConformancePayload_RequestInfoSchema, requestInfo(ctx, requests)));
    throw errorFromProto(def.response.value);
  }
  if (def !== undefined) await wait(def.responseDelayMs);
  return {
    payload: create(ConformancePayloadSchema, {
      requestInfo: requestInfo(ctx, requests),
      ...(def?.response.case === "responseData" ? { data: def.response.value } : {}),
    }),
  };
}

export function conformanceRoutes(router: ConnectRouter): void {
  router.service(ConformanceService, {
    unary: (req, ctx) => unaryResponse(req.responseDefinition, [anyPack(UnaryRequestSchema, req)], ctx),
    idempotentUnary: (req, ctx) => unaryResponse(req.responseDefinition, [anyPack(IdempotentUnaryRequestSchema, req)], ctx),
    async clientStream(reqs, ctx) {
      let def: UnaryResponseDefinition | undefined;
      const all: Any[] = [];
      for await (const req of reqs) {
        def ??= req.responseDefinition;
        all.push(anyPack(ClientStreamRequestSchema, req));
      }
      return unaryResponse(def, all, ctx);
    },
    async *serverStream(req, ctx) {
      const def = req.responseDefinition;
      appendHeaders(ctx.responseHeader, def?.responseHeaders ?? []);
      appendHeaders(ctx.responseTrailer, def?.responseTrailers ?? []);
      const packed = anyPack(ServerStreamRequestSchema, req);
      let info: ConformancePayload_RequestInfo | undefined = requestInfo(ctx, [packed]);
      for (const data of def?.responseData ?? []) {
        await wait(def?.responseDelayMs ?? 0);
        yield { payload: create(ConformancePayloadSchema, { ...(info !== undefined ? { requestInfo: info } : {}), data }) };
        info = undefined; // only the first response echoes the request
      }
      if (def?.error !== undefined) {
        if (def.responseData.length === 0) def.error.details.push(anyPack(ConformancePayload_RequestInfoSchema, requestInfo(ctx, [packed])));
        throw errorFromProto(def.error);
      }
    },
    async *bidiStream(reqs, ctx) {
      let def: StreamResponseDefinition | undefined;
      let fullDuplex = false;
      let sent = 0;
      let pending: Any[] = [];
      for await (const req of reqs) {
        if (def === undefined) {
          def = req.responseDefinition;
          appendHeaders(ctx.responseHeader, def?.responseHeaders ?? []);
          appendHeaders(ctx.responseTrailer, def?.responseTrailers ?? []);
          fullDuplex = req.fullDuplex;
        }
        pending.push(anyPack(BidiStreamRequestSchema, req));
        if (!fullDuplex) continue;
        if (def === undefined || sent >= def.responseData.length) break;
        await wait(def.responseDelayMs);
        const data = def.responseData[sent];
        yield {
          payload: create(ConformancePayloadSchema, {
            requestInfo: requestInfo(ctx, [anyPack(BidiStreamRequestSchema, req)]),
            ...(data !== undefined ? { data } : {}),
          }),
        };
        sent++;
        pending = [];
      }
      const info = requestInfo(ctx, pending);
      for (; sent < (def?.responseData.length ?? 0); sent++) {
        await wait(def?.responseDelayMs ?? 0);
        const data = def?.responseData[sent];
        yield { payload: create(ConformancePayloadSchema, { ...(sent === 0 ? { requestInfo: info } : {}), ...(data !== undefined ? { data } : {}) }) };
      }
      if (def?.error !== undefined) {
        if (def.responseData.length === 0) def.error.details.push(anyPack(ConformancePayload_RequestInfoSchema, info));
        throw errorFromProto(def.error);
      }
    },
  });
}
