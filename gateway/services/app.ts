// AppService: apps of the caller's organization, hosting, and the legacy per-app webhook.
import type { ServiceImpl } from "@connectrpc/connect";
import { failedPrecondition } from "../../src/errors.js";
import { T, type AppRecord, type AppWebhookRecord } from "../../src/directory.js";
import type { AppService, AppWebhookInput } from "../../src/gen/media/v1/app_pb.js";
import { randomToken } from "../../src/ids.js";
import { Check, LIMITS } from "../../src/validation.js";
import { callerOf } from "../access.js";
import { appMessage } from "../../wire/present.js";
import { visibleApp } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";

export const LEGACY_WEBHOOK_EVENTS = ["job.completed", "job.failed", "job.progress", "job.canceled", "output.completed", "output.failed"] as const;

function checkWebhook(check: Check, w: AppWebhookInput | undefined, creating: boolean): void {
  if (!w) return;
  if (w.url === "" && !creating) return; // removal
  check.required("webhook.url", w.url);
  if (w.url !== "") check.httpsUrl("webhook.url", w.url);
  if (w.events.length === 0) check.add("webhook.events", "must name at least one event");
  w.events.forEach((e, i) => {
    if (!(LEGACY_WEBHOOK_EVENTS as readonly string[]).includes(e)) check.add(`webhook.events[${i}]`, `unknown event; expected one of ${LEGACY_WEBHOOK_EVENTS.join(", ")}`);
  });
}

/** Applies a webhook input; returns the new webhook and the plaintext secret when one was made. */
function applyWebhook(d: ServiceDeps, current: AppWebhookRecord | undefined, w: AppWebhookInput): { webhook: AppWebhookRecord | undefined; secret?: string } {
  if (w.url === "") return { webhook: undefined };
  const makeSecret = w.generateSecret || w.regenerateSecret;
  const secret = makeSecret ? `whsec_${randomToken(32)}` : undefined;
  const kept = current && !makeSecret ? { sealedSecret: current.sealedSecret, secretHint: current.secretHint } : { secretHint: "" };
  const webhook: AppWebhookRecord = {
    url: w.url,
    events: [...new Set(w.events)],
    ...kept,
    ...(secret ? { sealedSecret: d.box.encrypt(secret), secretHint: secret.slice(-4) } : {}),
  } as AppWebhookRecord;
  return secret ? { webhook, secret } : { webhook };
}

export function appService(d: ServiceDeps): ServiceImpl<typeof AppService> {
  return {
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().required("name", req.name).length("name", req.name, 1, LIMITS.name).length("description", req.description, 0, LIMITS.description);
      checkWebhook(check, req.webhook, true);
      check.done();
      const hook = req.webhook ? applyWebhook(d, undefined, req.webhook) : { webhook: undefined };
      const app = await d.directory.createApp(caller.org!.id, {
        name: req.name,
        ...(req.description !== undefined ? { description: req.description } : {}),
        ...(hook.webhook ? { webhook: hook.webhook } : {}),
      });
      return { app: appMessage(app), webhookSecret: hook.secret };
    },
    async get(req, ctx) {
      return { app: appMessage(await visibleApp(d.directory, callerOf(ctx.values), req.id)) };
    },
    async update(req, ctx) {
      const current = await visibleApp(d.directory, callerOf(ctx.values), req.id);
      const check = new Check().length("name", req.name, 1, LIMITS.name).length("description", req.description, 0, LIMITS.description);
      checkWebhook(check, req.webhook, false);
      check.done();
      if (current.status === "archived") throw failedPrecondition(`app ${current.id} is archived`);
      let secret: string | undefined;
      const app = await d.directory.changeApp(current.id, (a) => {
        let next: AppRecord = { ...a, ...(req.name !== undefined ? { name: req.name } : {}), ...(req.description !== undefined ? { description: req.description } : {}) };
        if (req.webhook) {
          const hook = applyWebhook(d, a.webhook, req.webhook);
          secret = hook.secret;
          const { webhook: _old, ...rest } = next;
          next = hook.webhook ? { ...rest, webhook: hook.webhook } : rest;
        }
        return next;
      });
      return { app: appMessage(app), webhookSecret: secret };
    },
    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      const onlyOwn = caller.kind === "key" ? caller.app.id : undefined;
      const page = await d.paginator.page<AppRecord>(T.apps, caller.org!.id, `apps:${caller.org!.id}:${onlyOwn ?? ""}:${req.includeArchived}`, req.pagination, (a) =>
        (req.includeArchived || a.status === "active") && (onlyOwn === undefined || a.id === onlyOwn),
      );
      return { apps: page.items.map((r) => appMessage(r.value)), pagination: page.pagination };
    },
    async archive(req, ctx) {
      const current = await visibleApp(d.directory, callerOf(ctx.values), req.id);
      if (current.status === "archived") throw failedPrecondition(`app ${current.id} is already archived`);
      const app = await d.directory.changeApp(current.id, (a) => ({ ...a, status: "archived", archivedAt: Date.now() }));
      return { app: appMessage(app) };
    },
    async enableHosting(req, ctx) {
      const current = await visibleApp(d.directory, callerOf(ctx.values), req.id);
      if (current.status === "archived") throw failedPrecondition(`app ${current.id} is archived`);
      const app = current.hostingEnabledAt !== undefined ? current : await d.directory.changeApp(current.id, (a) => ({ ...a, hostingEnabledAt: a.hostingEnabledAt ?? Date.now() }));
      return { app: appMessage(app) };
    },
  };
}
