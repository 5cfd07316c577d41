// AppService: apps of the caller's organization, hosting, and the legacy per-app webhook.
import type { ServiceImpl } from "@connectrpc/connect";
import { failedPrecondition } from "../../src/errors.js";
import { T, type AppRecord, type AppWebhookRecord } from "../../src/directory.js";
import type { AppHostingInput, AppService, AppWebhookInput } from "../../src/gen/media/v1/app_pb.js";
import { randomToken } from "../../src/ids.js";
import { Check, LIMITS } from "../../src/validation.js";
import { callerOf } from "../access.js";
import { appMessage } from "../../wire/present.js";
import { HOSTING_LIMITS, newHosting, rotateKey, type AppHostingRecord } from "../../src/hosting.js";
import { visibleApp } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";
import { SOURCE_DELETIONS, SOURCE_DELETIONS_PARTITION, Video, VIDEOS, type SourceDeletionRow, type VideoRecord } from "../../actors/video/messages.js";

export const LEGACY_WEBHOOK_EVENTS = ["job.completed", "job.failed", "job.progress", "job.canceled", "output.completed", "output.failed"] as const;

function checkWebhook(check: Check, w: AppWebhookInput | undefined, creating: boolean): void {
  if (!w) return;
  if (w.url === "" && !creating) return; // removal
  check.required("webhook.url", w.url);
  if (w.url !== "") check.httpsUrl("webhook.url", w.url);
  if (w.events.length === 0) check.add("webhook.events", "must name at least one event");
  w.events.forEach((e, i) => {
    if (!(LEGACY_WEBHOOK_EVENTS as readonly string[]).includes(e))
      check.add(`webhook.events[${i}]`, `unknown event; expected one of ${LEGACY_WEBHOOK_EVENTS.join(", ")}`);
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

/** Hosting settings of an Update, checked; applied to the current settings. */
function applyHosting(d: ServiceDeps, check: Check, current: AppHostingRecord | undefined, h: AppHostingInput): AppHostingRecord | undefined {
  if (!current) {
    check.add("hosting", "hosting is not enabled for this app; call EnableHosting first");
    return undefined;
  }
  if (h.cdnHostname !== undefined && h.cdnHostname !== "" && !/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:\d{1,5})?$/i.test(h.cdnHostname))
    check.add("hosting.cdn_hostname", "must be a host name, optionally with :port (no scheme or path)");
  if (h.playerBaseUrl !== undefined && h.playerBaseUrl !== "") {
    let ok = false;
    try {
      const u = new URL(h.playerBaseUrl);
      ok = (u.protocol === "https:" || u.protocol === "http:") && u.search === "" && u.hash === "" && u.username === "";
    } catch {
      ok = false;
    }
    if (!ok) check.add("hosting.player_base_url", "must be an http(s) URL without query or fragment");
  }
  if (h.deleteSourceAfterDays !== undefined && (h.deleteSourceAfterDays < 0 || h.deleteSourceAfterDays > HOSTING_LIMITS.maxRetentionDays))
    check.add("hosting.delete_source_after_days", `must be 0 (keep sources) to ${HOSTING_LIMITS.maxRetentionDays}`);
  if (h.defaultLadder.length > HOSTING_LIMITS.ladderRungs) check.add("hosting.default_ladder", `at most ${HOSTING_LIMITS.ladderRungs} rungs`);
  h.defaultLadder.forEach((r, i) => {
    if (r < HOSTING_LIMITS.minRung || r > HOSTING_LIMITS.maxRung)
      check.add(`hosting.default_ladder[${i}]`, `must be a height from ${HOSTING_LIMITS.minRung} to ${HOSTING_LIMITS.maxRung}`);
  });
  let next: AppHostingRecord = {
    ...current,
    ...(h.cdnHostname !== undefined ? { cdnHostname: h.cdnHostname.toLowerCase() } : {}),
    ...(h.playerBaseUrl !== undefined ? { playerBaseUrl: h.playerBaseUrl.replace(/\/+$/, "") } : {}),
    ...(h.deleteSourceAfterDays !== undefined ? { deleteSourceAfterDays: h.deleteSourceAfterDays } : {}),
    ...(h.defaultLadder.length > 0 ? { ladder: [...new Set(h.defaultLadder)].sort((a, b) => b - a) } : {}),
  };
  if (h.rotateSigningKey) next = rotateKey(d.box, next);
  return next;
}

/**
 * The spec: a pending source deletion is "cleared on setting change". Every pending deletion of the
 * app's videos goes when delete_source_after_days changes (our decision: none is rescheduled, so a
 * shorter rule never deletes a source sooner than the owner was shown; videos that become ready
 * from now on follow the new rule, and unpinning schedules by it). Done before Update answers.
 */
async function clearPendingDeletions(d: ServiceDeps, appId: string): Promise<void> {
  const ofApp = async (row: SourceDeletionRow) => (row.appId ?? (await d.store.get<VideoRecord>(VIDEOS, row.videoId))?.value.appId) === appId;
  let before: string | undefined;
  for (;;) {
    const page = await d.store.scan<SourceDeletionRow>(SOURCE_DELETIONS, SOURCE_DELETIONS_PARTITION, {
      limit: 500,
      filter: (r) => r.appId === undefined || r.appId === appId,
      ...(before !== undefined ? { before } : {}),
    });
    for (const row of page.items) {
      if (!(await ofApp(row.value))) continue;
      const reply = await d.actors.ask(Video, row.value.videoId, { type: "update", at: Date.now(), patch: {}, deleteSourceAt: null });
      if (!reply.ok) d.log.warn({ video_id: row.value.videoId, reason: reply.rejection.message }, "pending source deletion not cleared");
    }
    if (!page.more || page.items.length === 0) return;
    before = page.items.at(-1)!.sort;
  }
}

export function appService(d: ServiceDeps): ServiceImpl<typeof AppService> {
  return {
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check()
        .required("name", req.name)
        .length("name", req.name, 1, LIMITS.name)
        .length("description", req.description, 0, LIMITS.description);
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
      const hosting = req.hosting ? applyHosting(d, check, current.hosting, req.hosting) : undefined;
      check.done();
      if (current.status === "archived") throw failedPrecondition(`app ${current.id} is archived`);
      let secret: string | undefined;
      const app = await d.directory.changeApp(current.id, (a) => {
        let next: AppRecord = {
          ...a,
          ...(req.name !== undefined ? { name: req.name } : {}),
          ...(req.description !== undefined ? { description: req.description } : {}),
          ...(hosting ? { hosting } : {}),
        };
        if (req.webhook) {
          const hook = applyWebhook(d, a.webhook, req.webhook);
          secret = hook.secret;
          const { webhook: _old, ...rest } = next;
          next = hook.webhook ? { ...rest, webhook: hook.webhook } : rest;
        }
        return next;
      });
      if (hosting && hosting.deleteSourceAfterDays !== current.hosting?.deleteSourceAfterDays) await clearPendingDeletions(d, app.id);
      return { app: appMessage(app), webhookSecret: secret };
    },
    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      const onlyOwn = caller.kind === "key" ? caller.app.id : undefined;
      const page = await d.paginator.page<AppRecord>(
        T.apps,
        caller.org!.id,
        `apps:${caller.org!.id}:${onlyOwn ?? ""}:${req.includeArchived}`,
        req.pagination,
        (a) => (req.includeArchived || a.status === "active") && (onlyOwn === undefined || a.id === onlyOwn),
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
      // Enabling generates the CDN signing key; enabling again changes nothing.
      const app =
        current.hosting !== undefined
          ? current
          : await d.directory.changeApp(current.id, (a) =>
              a.hosting ? a : { ...a, hostingEnabledAt: a.hostingEnabledAt ?? Date.now(), hosting: newHosting(d.box) },
            );
      return { app: appMessage(app) };
    },
  };
}
