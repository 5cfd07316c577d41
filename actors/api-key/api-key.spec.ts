// The API key actor's rules without I/O: create once (a retry is no change), revoke once, record
// use until revoked, and the rows every change rewrites.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { sortKey } from "../../src/pagination.js";
import { ApiKeyBehavior as B } from "./api-key.js";
import { API_KEY_HASHES, API_KEYS, KEY_SECRET_LENGTH, ORG_API_KEYS, secretFields, type ApiKeyCommand, type ApiKeyState } from "./messages.js";

const secret = `ak_${"a1B2c3D4e5".repeat(4)}`;
const request = { appId: "app_1", organizationId: "org_1", name: "ci", scopes: ["jobs:write", "jobs:write"], ...secretFields(secret, "hash_1") };
const create: ApiKeyCommand = { type: "create", id: "key_1", at: 100, request };

function run(state: ApiKeyState, ...commands: ApiKeyCommand[]): ApiKeyState {
  for (const c of commands) {
    const d = B.decide(state, c);
    if ("code" in d) throw new Error(d.message);
    state = d.reduce((s, e) => B.fold(s, e), state);
  }
  return state;
}
const created = run(B.initial, create);
const key = created.key!;

describe("API key actor", () => {
  it("decides the record: the secret only as its hash, with a prefix and a hint to recognise it by; each scope once; created when asked", () => {
    expect(secret).toHaveLength(3 + KEY_SECRET_LENGTH);
    expect(key).toStrictEqual({
      id: "key_1",
      appId: "app_1",
      organizationId: "org_1",
      name: "ci",
      scopes: ["jobs:write"],
      createdAt: 100,
      keyPrefix: "ak_a1B2c3D4",
      keyHint: "D4e5",
      secretHash: "hash_1",
    });
    const described = run(B.initial, { ...create, request: { ...request, description: "deploys", expiresAt: 5000 } });
    expect(described.key).toMatchObject({ description: "deploys", expiresAt: 5000 });
  });

  it("a create retried with the same secret is no change; another secret under the same id is refused", () => {
    expect(B.decide(created, create)).toEqual([]);
    expect(B.decide(created, { ...create, request: { ...request, secretHash: "hash_2" } })).toEqual({
      code: Code.AlreadyExists,
      message: "API key key_1 exists",
    });
  });

  it("revokes once, with or without a reason", () => {
    expect(B.decide(B.initial, { type: "revoke", at: 1 })).toEqual({ code: Code.NotFound, message: "API key not found" });
    expect(B.decide(created, { type: "revoke", at: 200 })).toStrictEqual([{ type: "revoked", at: 200 }]);
    const revoked = run(created, { type: "revoke", at: 200, reason: "leaked" });
    expect(revoked.key).toEqual({ ...key, revokedAt: 200, revokeReason: "leaked" });
    expect("revokeReason" in run(created, { type: "revoke", at: 200 }).key!).toBe(false);
    expect(B.decide(revoked, { type: "revoke", at: 300 })).toEqual({ code: Code.FailedPrecondition, message: "API key key_1 is already revoked" });
  });

  it("records use until revoked; nothing for a key that does not exist", () => {
    expect(run(created, { type: "touch", at: 150 }).key).toEqual({ ...key, lastUsedAt: 150 });
    expect(B.decide(B.initial, { type: "touch", at: 150 })).toEqual([]);
    const revoked = run(created, { type: "revoke", at: 200 });
    expect(B.decide(revoked, { type: "touch", at: 250 })).toEqual([]);
    expect(B.fold(B.initial, { type: "used", at: 1 })).toBe(B.initial);
    expect(B.fold(B.initial, { type: "revoked", at: 1 })).toBe(B.initial);
  });

  it("keeps its table names: stored keys are found by them", () => {
    expect([API_KEYS, ORG_API_KEYS, API_KEY_HASHES, B.type]).toEqual(["api_keys", "org_api_keys", "api_key_hashes", "api_key"]);
  });

  it("rewrites the key's rows by app, by organization and by hash after every change", () => {
    const sort = sortKey(100, "key_1");
    const used = run(created, { type: "touch", at: 150 });
    const rows = [
      { table: API_KEYS, id: "key_1", value: used.key, partition: "app_1", sort },
      { table: ORG_API_KEYS, id: "key_1", value: used.key, partition: "org_1", sort },
      { table: API_KEY_HASHES, id: "hash_1", value: { keyId: "key_1", key: used.key } },
    ];
    expect(B.repair(used)).toEqual(rows);
    expect(B.readModel(used, { type: "used", at: 150 })).toEqual(rows);
    expect(B.repair(B.initial)).toEqual([]);
  });
});
