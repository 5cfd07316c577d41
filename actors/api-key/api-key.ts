// ApiKeyActor: one persistent actor per API key. The secret never reaches it, only its hash.
import { Code } from "@connectrpc/connect";
import { sortKey } from "../../src/pagination.js";
import type { RecordWrite } from "../../src/store/port.js";
import type { Decision, EntityBehavior } from "../host.js";

export interface ApiKeyRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  readonly name: string;
  readonly description?: string;
  readonly keyPrefix: string;
  readonly keyHint: string;
  readonly secretHash: string;
  readonly scopes: readonly string[];
  readonly lastUsedAt?: number;
  readonly expiresAt?: number;
  readonly createdAt: number;
  readonly revokedAt?: number;
  readonly revokeReason?: string;
}

/** Length of the random part of a key secret (`ak_` + 40 base62 characters). */
export const KEY_SECRET_LENGTH = 40;
/** "ak_" and 8 characters: enough to find a key in logs, useless to an attacker. */
const KEY_PREFIX_LENGTH = 11;

/** The stored record of a key whose secret is `secret`; the secret itself is kept only as its hash. */
export function apiKeyRecord(secret: string, secretHash: string, fields: Omit<ApiKeyRecord, "keyPrefix" | "keyHint" | "secretHash">): ApiKeyRecord {
  return { ...fields, keyPrefix: secret.slice(0, KEY_PREFIX_LENGTH), keyHint: secret.slice(-4), secretHash };
}

export interface ApiKeyState {
  readonly key?: ApiKeyRecord;
}

/** The key's commands by type: what each carries. */
export interface ApiKeyCommands {
  readonly create: { readonly key: ApiKeyRecord };
  readonly revoke: { readonly at: number; readonly reason?: string };
  readonly touch: { readonly at: number };
}
type CommandOf<K extends keyof ApiKeyCommands> = { readonly type: K } & ApiKeyCommands[K];
export type ApiKeyCommand = { [K in keyof ApiKeyCommands]: CommandOf<K> }[keyof ApiKeyCommands];

export type ApiKeyEvent =
  | { readonly type: "created"; readonly key: ApiKeyRecord }
  | { readonly type: "revoked"; readonly at: number; readonly reason?: string }
  | { readonly type: "used"; readonly at: number };

export const API_KEYS = "api_keys";
export const API_KEY_HASHES = "api_key_hashes";
/** A row of API_KEY_HASHES. `key` is absent on rows written before it was carried. */
export interface KeyByHash {
  readonly keyId: string;
  readonly key?: ApiKeyRecord;
}
/** The same read model listed by organization, for portal callers who list across apps. */
export const ORG_API_KEYS = "org_api_keys";

/** One decision per command type: a mapped type, so each handler gets its own command's fields. */
type Handlers = { readonly [K in keyof ApiKeyCommands]: (state: ApiKeyState, c: CommandOf<K>) => Decision<ApiKeyEvent> };

const missing = { code: Code.NotFound, message: "API key not found" } as const;

const decideBy: Handlers = {
  // A create retried after a lost reply carries the same derived secret: answer it, change nothing.
  create: (state, c) => {
    if (!state.key) return [{ type: "created", key: c.key }];
    return state.key.secretHash === c.key.secretHash ? [] : { code: Code.AlreadyExists, message: `API key ${c.key.id} exists` };
  },
  revoke: (state, c) => {
    if (!state.key) return missing;
    if (state.key.revokedAt !== undefined) return { code: Code.FailedPrecondition, message: `API key ${state.key.id} is already revoked` };
    return [{ type: "revoked", at: c.at, ...(c.reason !== undefined ? { reason: c.reason } : {}) }];
  },
  touch: (state, c) => (!state.key || state.key.revokedAt !== undefined ? [] : [{ type: "used", at: c.at }]),
};

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
