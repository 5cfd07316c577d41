// The SERVER span of an RPC, named and described by OpenTelemetry's RPC conventions for Connect
// (rpc.system connect_rpc, rpc.service, rpc.method, rpc.connect_rpc.error_code); it continues a
// caller's traceparent. Taken with the RPC metrics (rpc-metrics.ts), which know the call's code.
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { failedWith, serverSpan, tracingOn } from "../src/tracing.js";

/** Codes that are the server's fault: its span is marked failed (the others are the caller's). */
const SERVER_FAULTS = new Set(["unknown", "deadline_exceeded", "unimplemented", "internal", "unavailable", "data_loss"]);

export function rpcSpan(handler: UniversalHandler, req: UniversalServerRequest): { run<T>(fn: () => T): T; end(code: string): void } | undefined {
  if (!tracingOn()) return undefined; // before any allocation: this runs on every call
  const service = handler.service.typeName;
  const started = serverSpan(req.header, `${service}/${handler.method.name}`, {
    "rpc.system": "connect_rpc",
    "rpc.service": service,
    "rpc.method": handler.method.name,
  });
  if (!started) return undefined;
  const { span, run } = started;
  return {
    run,
    end(code) {
      if (code !== "ok") span.setAttribute("rpc.connect_rpc.error_code", code);
      if (SERVER_FAULTS.has(code)) failedWith(span, code);
      span.end();
    },
  };
}
