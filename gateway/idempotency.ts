// The Idempotency-Key header: a mutating call retried with the same key, by the same caller,
// replays the first successful answer for 24 hours; the same key with another body is refused.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { alreadyExists, invalid } from "../src/errors.js";
import { sha256 } from "../src/secrets.js";
import type { Store } from "../src/store/port.js";
import { LIMITS } from "../src/validation.js";
import { CALLER, type Rule } from "./access.js";

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
const TABLE = "idempotency";

interface Remembered {
  readonly bodyHash: string;
  readonly response: string; // base64 of the binary response message
}

export function idempotencyInterceptor(store: Store, ruleOf: (service: string, method: string) => Rule | undefined): Interceptor {
  const inFlight = new Map<string, Promise<unknown>>();
  return (next) => async (req) => {
    const key = req.header.get("idempotency-key");
    if (key === null || req.stream || !ruleOf(req.service.typeName, req.method.name)?.mutating) return next(req);
    if (key === "" || key.length > LIMITS.idempotencyKey) {
      throw invalid([{ field: "Idempotency-Key", description: `header must be 1 to ${LIMITS.idempotencyKey} characters` }]);
    }
    const caller = req.contextValues.get(CALLER);
    const principal = caller?.kind === "key" ? caller.key.id : caller?.kind === "session" ? `${caller.user.id}/${caller.org?.id ?? ""}` : "anonymous";
    const id = sha256(`${principal}\0${req.requestMethod}\0${req.url}\0${key}`);
    const bodyHash = sha256(toBinary(req.method.input, req.message));
    // One call per key at a time: a concurrent retry waits for the first to finish.
    while (inFlight.has(id)) await inFlight.get(id)!.catch(() => undefined);
    const remembered = await store.get<Remembered>(TABLE, id);
    if (remembered) {
      if (remembered.value.bodyHash !== bodyHash) throw alreadyExists("Idempotency-Key was used with a different request body", "Idempotency-Key");
      const header = new Headers({ "idempotent-replayed": "true" });
      return { stream: false, service: req.service, method: req.method, header, trailer: new Headers(), message: fromBinary(req.method.output, Buffer.from(remembered.value.response, "base64")) } as never;
    }
    const run = (async () => {
      const res = await next(req);
      if (!res.stream) {
        const value: Remembered = { bodyHash, response: Buffer.from(toBinary(req.method.output, res.message as never)).toString("base64") };
        await store.commit({ writes: [{ table: TABLE, id, value, expiresAt: Date.now() + IDEMPOTENCY_TTL_MS }] });
      }
      return res;
    })();
    inFlight.set(id, run);
    try {
      return await run;
    } finally {
      inFlight.delete(id);
    }
  };
}
