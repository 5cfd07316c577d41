// ApiKeyActor: one persistent actor per API key. The secret never reaches it, only its hash.
import { Code } from "@connectrpc/connect";
import { sortKey } from "../../src/pagination.js";
import type { RecordWrite } from "../../src/store/port.js";
import type { Decision, EntityBehavior } from "../host.js";
import {
  API_KEY_HASHES,
  API_KEYS,
  ORG_API_KEYS,
  type ApiKeyCommand,
  type ApiKeyCommandOf,
  type ApiKeyCommands,
  type ApiKeyRecord,
  type ApiKeyState,
  type KeyByHash,
} from "./messages.js";

type CommandOf<K extends keyof ApiKeyCommands> = ApiKeyCommandOf<K>;

export type ApiKeyEvent =
  | { readonly type: "created"; readonly key: ApiKeyRecord }
  | { readonly type: "revoked"; readonly at: number; readonly reason?: string }
  | { readonly type: "used"; readonly at: number };

/** One decision per command type: a mapped type, so each handler gets its own command's fields. */
type Handlers = { readonly [K in keyof ApiKeyCommands]: (state: ApiKeyState, c: CommandOf<K>) => Decision<ApiKeyEvent> };

const missing = { code: Code.NotFound, message: "API key not found" } as const;

const decideBy: Handlers = {
  // A create retried after a lost reply carries the same derived secret: answer it, change nothing.
  create: (state, c) => {
    if (!state.key) return [{ type: "created", key: keyOf(c) }];
    return state.key.secretHash === c.request.secretHash ? [] : { code: Code.AlreadyExists, message: `API key ${c.id} exists` };
  },
  revoke: (state, c) => {
    if (!state.key) return missing;
    if (state.key.revokedAt !== undefined) return { code: Code.FailedPrecondition, message: `API key ${state.key.id} is already revoked` };
    return [{ type: "revoked", at: c.at, ...(c.reason !== undefined ? { reason: c.reason } : {}) }];
  },
  touch: (state, c) => (!state.key || state.key.revokedAt !== undefined ? [] : [{ type: "used", at: c.at }]),
};

/** The record a create decides: the request's fields, each scope once, created when asked. */
function keyOf(c: CommandOf<"create">): ApiKeyRecord {
  const r = c.request;
  return {
    id: c.id,
    appId: r.appId,
    organizationId: r.organizationId,
    name: r.name,
    ...(r.description !== undefined ? { description: r.description } : {}),
    keyPrefix: r.keyPrefix,
    keyHint: r.keyHint,
    secretHash: r.secretHash,
    scopes: [...new Set(r.scopes)],
    ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}),
    createdAt: c.at,
  };
}

function decide<K extends keyof ApiKeyCommands>(state: ApiKeyState, command: CommandOf<K>): Decision<ApiKeyEvent> {
  return decideBy[command.type](state, command);
}

export const ApiKeyBehavior: EntityBehavior<ApiKeyState, ApiKeyCommand, ApiKeyEvent> = {
  type: "api_key",
  initial: {},
  decide,
  fold(state, event) {
    switch (event.type) {
      case "created":
        return { key: event.key };
      case "revoked":
        return state.key ? { key: { ...state.key, revokedAt: event.at, ...(event.reason !== undefined ? { revokeReason: event.reason } : {}) } } : state;
      case "used":
        return state.key ? { key: { ...state.key, lastUsedAt: event.at } } : state;
    }
  },
  repair(state): RecordWrite[] {
    const key = state.key;
    if (!key) return [];
    const sort = sortKey(key.createdAt, key.id);
    return [
      { table: API_KEYS, id: key.id, value: key, partition: key.appId, sort },
      { table: ORG_API_KEYS, id: key.id, value: key, partition: key.organizationId, sort },
      // The hash row carries the key itself, so authentication is one read, not two. Unconditional:
      // a 40-character random secret does not collide, and the journal already fences writers.
      { table: API_KEY_HASHES, id: key.secretHash, value: { keyId: key.id, key } satisfies KeyByHash },
    ];
  },
  // Every event rewrites the same rows: the read model is a function of the state alone.
  readModel(state) {
    return ApiKeyBehavior.repair(state);
  },
};
