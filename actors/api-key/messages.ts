// The API key's protocol: its reference, record, commands and read-model tables. Everything outside
// actors/api-key/ that speaks to a key or reads one imports this file, never the behaviour.
import { entity, type CommandOf, type CommandUnion } from "../entity.js";

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

/**
 * What a create carries: the caller's fields, and what the gateway that made the secret derived
 * from it. The secret itself never reaches the actor; the key decides its record from this.
 */
export interface ApiKeyRequest {
  readonly appId: string;
  readonly organizationId: string;
  readonly name: string;
  readonly description?: string;
  /** As asked: the key keeps each once. */
  readonly scopes: readonly string[];
  readonly expiresAt?: number;
  readonly secretHash: string;
  readonly keyPrefix: string;
  readonly keyHint: string;
}

/** What a secret shows of itself in a request: its hash, and a prefix and a hint to recognise it by. */
export function secretFields(secret: string, secretHash: string): Pick<ApiKeyRequest, "secretHash" | "keyPrefix" | "keyHint"> {
  return { secretHash, keyPrefix: secret.slice(0, KEY_PREFIX_LENGTH), keyHint: secret.slice(-4) };
}

export interface ApiKeyState {
  readonly key?: ApiKeyRecord;
}

/** The key's commands by type: what each carries. */
export interface ApiKeyCommands {
  /** id: the key's (derived from an Idempotency-Key when there is one); at: when it was asked. */
  readonly create: { readonly id: string; readonly at: number; readonly request: ApiKeyRequest };
  readonly revoke: { readonly at: number; readonly reason?: string };
  readonly touch: { readonly at: number };
}
export type ApiKeyCommandOf<K extends keyof ApiKeyCommands> = CommandOf<ApiKeyCommands, K>;
export type ApiKeyCommand = CommandUnion<ApiKeyCommands>;

/** An API key entity: asked with an ApiKeyCommand, it answers its whole state. */
export const ApiKey = entity<ApiKeyCommand, ApiKeyState>("api_key");

export const API_KEYS = "api_keys";
export const API_KEY_HASHES = "api_key_hashes";
/** A row of API_KEY_HASHES. `key` is absent on rows written before it was carried. */
export interface KeyByHash {
  readonly keyId: string;
  readonly key?: ApiKeyRecord;
}
/** The same read model listed by organization, for portal callers who list across apps. */
export const ORG_API_KEYS = "org_api_keys";
