// APIKeyService: keys are created, revoked and touched through their ApiKeyActor; reads come
// from the read model the actor keeps. The secret exists only in the Create response.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { API_KEYS, ApiKey, secretFields, KEY_SECRET_LENGTH, ORG_API_KEYS, type ApiKeyRecord } from "../../actors/api-key/messages.js";
import type { Reply } from "../../actors/host.js";
import { apiError, invalidField, permissionDenied } from "../../src/errors.js";
import type { APIKeyService } from "../../src/gen/media/v1/api_key_pb.js";
import { newId, Prefix, randomToken } from "../../src/ids.js";
import { Check, LIMITS } from "../../src/validation.js";
import { callerOf, hasScope, isScope, type Caller, type Scope } from "../access.js";
import { apiKeyMessage } from "../../wire/present.js";
import { namedApp, visible, visibleApp } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";

function accepted<S>(reply: Reply<S>): S {
  if (reply.ok) return reply.state;
  throw apiError(reply.rejection.code, reply.rejection.message, reply.rejection.violations);
}

async function visibleKey(d: ServiceDeps, caller: Caller, id: string): Promise<ApiKeyRecord> {
  new Check().id("id", id, Prefix.apiKey).done();
  return visible(caller, (await d.store.get<ApiKeyRecord>(API_KEYS, id))?.value, "API key", id);
}

export function apiKeyService(d: ServiceDeps): ServiceImpl<typeof APIKeyService> {
  return {
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check()
        .required("name", req.name)
        .length("name", req.name, 1, LIMITS.name)
        .length("description", req.description, 0, LIMITS.description);
      const expiresAt = req.expiresAt ? timestampMs(req.expiresAt) : undefined;
      if (expiresAt !== undefined && expiresAt <= Date.now()) check.add("expires_at", "must be in the future");
      req.scopes.forEach((s, i) => {
        if (!isScope(s)) check.add(`scopes[${i}]`, "must be <resource>:<read|write> with a known resource, e.g. jobs:write");
      });
      if (caller.kind === "session") check.id("app_id", req.appId, Prefix.app);
      check.done();
      // A scoped key mints only keys as narrow as itself: an empty list would mean full access.
      if (caller.kind === "key" && caller.key.scopes.length > 0) {
        const wider = req.scopes.length === 0 ? ["full access"] : req.scopes.filter((s) => !hasScope(caller.key.scopes, s as Scope));
        if (wider.length > 0) throw permissionDenied(`a scoped API key cannot grant ${wider.join(", ")}`);
      }
      const app = caller.kind === "key" ? caller.app : await visibleApp(d.directory, caller, req.appId, "app_id");
      if (app.status !== "active") throw invalidField("app_id", "app is archived");
      // With an Idempotency-Key the id and secret are derived from it, so a retry after a lost
      // reply (a gateway or actor host died) finds the same key instead of making a second one.
      const retryKey = ctx.requestHeader.get("idempotency-key");
      const label = retryKey ? `api-key:${caller.kind === "key" ? caller.key.id : caller.user.id}:${app.id}:${retryKey}` : undefined;
      const secret = `ak_${label ? d.box.deriveToken(`${label}:secret`, KEY_SECRET_LENGTH) : randomToken(KEY_SECRET_LENGTH)}`;
      const id = label ? `${Prefix.apiKey}${d.box.deriveToken(`${label}:id`, 20)}` : newId(Prefix.apiKey);
      const request = {
        appId: app.id,
        organizationId: app.organizationId,
        name: req.name,
        scopes: req.scopes,
        ...(req.description !== undefined ? { description: req.description } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
        ...secretFields(secret, d.box.hashSecret(secret)),
      };
      // An id minted here for this call is new: its actor needs no recovery reads (AskOptions.fresh).
      const state = accepted(await d.actors.ask(ApiKey, id, { type: "create", id, at: Date.now(), request }, { fresh: label === undefined }));
      return { apiKey: apiKeyMessage(state.key!), secret };
    },
    async get(req, ctx) {
      return { apiKey: apiKeyMessage(await visibleKey(d, callerOf(ctx.values), req.id)) };
    },
    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      if (req.appId !== "") new Check().id("app_id", req.appId, Prefix.app).done();
      // A session naming no app lists the whole organization's keys.
      const appId = (await namedApp(d.directory, caller, req.appId))?.id ?? "";
      const filter = (k: ApiKeyRecord) => req.includeRevoked || k.revokedAt === undefined;
      const listId = `keys:${caller.org!.id}:${appId}:${req.includeRevoked}`;
      const page =
        appId !== ""
          ? await d.paginator.page<ApiKeyRecord>(API_KEYS, appId, listId, req.pagination, filter)
          : await d.paginator.page<ApiKeyRecord>(ORG_API_KEYS, caller.org!.id, listId, req.pagination, filter);
      return { apiKeys: page.items.map((r) => apiKeyMessage(r.value)), pagination: page.pagination };
    },
    async revoke(req, ctx) {
      const caller = callerOf(ctx.values);
      new Check().length("reason", req.reason, 0, LIMITS.revokeReason).done();
      const key = await visibleKey(d, caller, req.id);
      const state = accepted(
        await d.actors.ask(ApiKey, key.id, { type: "revoke", at: Date.now(), ...(req.reason !== undefined ? { reason: req.reason } : {}) }),
      );
      return { apiKey: apiKeyMessage(state.key!) };
    },
  };
}
