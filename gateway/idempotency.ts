// The Idempotency-Key header: a mutating call retried with the same key, by the same caller,
// replays the first successful answer for 24 hours; the same key with another body is refused.
// The key is claimed in the store before the call runs, so concurrent retries through different
// gateways still run the call once. The remembered answer is sealed with the server key: answers
// that carry a secret shown once (an API key, a webhook signing secret) keep it encrypted at rest,
// and a replay still gives the caller who lost the first answer its secret.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, createContextKey, type Interceptor } from "@connectrpc/connect";
import { alreadyExists, apiError, invalid, VersionConflict } from "../src/errors.js";
import { newId, type Prefix } from "../src/ids.js";
import { sha256, type SecretBox } from "../src/secrets.js";
import type { Store, StoredRecord } from "../src/store/port.js";
import { LIMITS } from "../src/validation.js";
import { CALLER, type Rule } from "./access.js";

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * The call's Idempotency-Key header, for a handler whose call creates something: a call that failed
 * without an answer (a timeout, a store away) may still have created it, and releasing the claim
 * lets the retry run again, so such a handler derives the created id from the key (JobService/Create
 * does) and the retry meets what the first call made instead of making a second.
 */
export const IDEMPOTENCY_KEY = createContextKey<string | undefined>(undefined, { description: "the Idempotency-Key header" });
/**
 * The call under an Idempotency-Key, named for what it creates: the same for a retry by the same
 * caller of the same method with the same key and body, and for no other call. A create derives its
 * id from it (createdId), so a retry after a lost answer meets what the first call made: the
 * VideoService creates, CreateWebhookEndpoint and OriginService/Create do.
 */
export const IDEMPOTENT_CALL = createContextKey<string | undefined>(undefined, { description: "the Idempotency-Key's record and the body's hash" });

/** The id a create makes: derived from the call under an Idempotency-Key (a retry meets it), else a fresh one. */
export function createdId(box: SecretBox, call: string | undefined, prefix: Prefix): string {
  return call === undefined ? newId(prefix) : `${prefix}${box.deriveToken(`created:${prefix}:${call}`, 20)}`;
}
/**
 * What the first call under the same Idempotency-Key created, when this call's create met it (its
 * entity answered already_exists on the derived id). Its commit may have landed before its record
 * (a host died between them, and the next owner writes it): unavailable, so the caller retries.
 */
export async function madeBefore<T>(store: Store, table: string, id: string, what: string): Promise<T> {
  const made = (await store.get<T>(table, id))?.value;
  if (made === undefined) throw apiError(Code.Unavailable, `${what} ${id} is being created; retry`);
  return made;
}

/** A claim older than this belongs to a call whose gateway died: the next retry takes it over. */
const CLAIM_STALE_MS = 30_000;
const TABLE = "idempotency";

interface Remembered {
  readonly bodyHash: string;
  /** The binary response message sealed with the server key; absent while the first call is still running. */
  readonly response?: string;
  readonly claimedAt: number;
}

/** The stored claim of a key: per caller (an API key's id, a user in an organization) and method. */
export const idempotencyRecordId = (principal: string, method: string, key: string): string => sha256(`${principal}\0${method}\0${key}`);

export function idempotencyInterceptor(store: Store, box: SecretBox, ruleOf: (service: string, method: string) => Rule | undefined): Interceptor {
  return (next) => async (req) => {
    const key = req.header.get("idempotency-key");
    if (key === null || req.stream || !ruleOf(req.service.typeName, req.method.name)?.mutating) return next(req);
    if (key === "" || key.length > LIMITS.idempotencyKey) {
      throw invalid([{ field: "Idempotency-Key", description: `header must be 1 to ${LIMITS.idempotencyKey} characters` }]);
    }
    req.contextValues.set(IDEMPOTENCY_KEY, key);
    const caller = req.contextValues.get(CALLER);
    const principal = caller?.kind === "key" ? caller.key.id : caller?.kind === "session" ? `${caller.user.id}/${caller.org?.id ?? ""}` : "anonymous";
    const id = idempotencyRecordId(principal, `${req.service.typeName}/${req.method.name}`, key);
    const bodyHash = sha256(toBinary(req.method.input, req.message));
    req.contextValues.set(IDEMPOTENT_CALL, `${id}:${bodyHash}`);

    const replay = (r: Remembered) => {
      if (r.bodyHash !== bodyHash) throw alreadyExists("Idempotency-Key was used with a different request body", "Idempotency-Key");
      const header = new Headers({ "idempotent-replayed": "true" });
      // No protocol handler ran to set the answer's Content-Type, and a Connect client refuses an
      // answer without one: it is the request's (application/proto, application/json, grpc-web's).
      const type = req.header.get("content-type");
      if (type !== null) header.set("content-type", type);
      return {
        stream: false,
        service: req.service,
        method: req.method,
        header,
        trailer: new Headers(),
        // An answer remembered before answers were sealed is plain base64 (no "."), for its last day.
        message: fromBinary(req.method.output, Buffer.from(r.response!.includes(".") ? box.decrypt(r.response!) : r.response!, "base64")),
      } as never;
    };

    // Claim the key, or wait for whoever holds it.
    let claimed: number | undefined;
    for (let wait = 10; claimed === undefined; wait = Math.min(wait * 2, 200)) {
      const current: StoredRecord<Remembered> | undefined = await store.get<Remembered>(TABLE, id);
      if (current?.value.response !== undefined) return replay(current.value);
      if (current && current.value.bodyHash !== bodyHash) throw alreadyExists("Idempotency-Key was used with a different request body", "Idempotency-Key");
      if (current && Date.now() - current.value.claimedAt < CLAIM_STALE_MS) {
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
      const value: Remembered = { bodyHash, claimedAt: Date.now() };
      try {
        await store.commit({ writes: [{ table: TABLE, id, value, expectedVersion: current?.version ?? 0, expiresAt: Date.now() + IDEMPOTENCY_TTL_MS }] });
        claimed = (current?.version ?? 0) + 1;
      } catch (e) {
        if (!(e instanceof VersionConflict)) throw e;
      }
    }

    try {
      const res = await next(req);
      if (!res.stream) {
        const value: Remembered = {
          bodyHash,
          claimedAt: Date.now(),
          response: box.encrypt(Buffer.from(toBinary(req.method.output, res.message as never)).toString("base64")),
        };
        await store.commit({ writes: [{ table: TABLE, id, value, expectedVersion: claimed, expiresAt: Date.now() + IDEMPOTENCY_TTL_MS }] });
      }
      return res;
    } catch (e) {
      // A failed call is not remembered: release the claim so a retry runs it again.
      await store.commit({ writes: [{ table: TABLE, id, value: null, expectedVersion: claimed }] }).catch(() => undefined);
      throw e;
    }
  };
}
