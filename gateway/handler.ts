// Wrapping a Connect UniversalHandler: a function in front of it that keeps its route and protocol
// metadata, which the router and the hosts read (the JSON bridge, the RPC metrics and the Watch
// writer each wrap one).
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";

export function wrapHandler(inner: UniversalHandler, fn: (req: UniversalServerRequest) => Promise<UniversalServerResponse>): UniversalHandler {
  return Object.assign(fn, {
    protocolNames: inner.protocolNames,
    service: inner.service,
    method: inner.method,
    requestPath: inner.requestPath,
    allowedMethods: inner.allowedMethods,
    supportedContentType: inner.supportedContentType,
  });
}
