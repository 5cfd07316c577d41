// PresetService: custom presets of an app (stored records with unique slugs) beside the read-only
// system catalog, each shown with its estimated price per encoded minute.
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { AppRecord } from "../../src/directory.js";
import { failedPrecondition, invalidField, notFound } from "../../src/errors.js";
import {
  AudioSettingsSchema,
  Container,
  ContentType,
  DeliveryFormat,
  PresetSchema,
  QualityTier,
  StreamingConfigSchema,
  VideoCodec,
  VideoSettingsSchema,
  type Preset,
  type PresetService,
} from "../../src/gen/media/v1/preset_pb.js";
import { newId, Prefix } from "../../src/ids.js";
import {
  appPresets,
  changePreset,
  checkDescription,
  checkName,
  checkPresetSettings,
  checkSlug,
  findPreset,
  findPresetBySlug,
  insertPreset,
  isSystemPreset,
  plainAudio,
  plainStreaming,
  plainVideo,
  presetSettings,
  presetToOutputSpec,
  SYSTEM_PRESETS,
  type AnyPreset,
  type PresetRecord,
  type PresetSettings,
} from "../../src/presets.js";
import { eur, outputRateIfKnown } from "../../src/pricing.js";
import { Check } from "../../src/validation.js";
import { callerOf, type Caller } from "../access.js";
import { ts } from "../../wire/present.js";
import { actingApp, requireActingApp, visible } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";

/** EUR per encoded minute of the preset's whole output (every rung), before any input is known. */
export function estimatedCostPerMinute(p: AnyPreset): number | undefined {
  const rate = outputRateIfKnown(presetToOutputSpec(p), undefined);
  return rate === undefined ? undefined : eur(rate);
}

export function presetMessage(p: AnyPreset): Preset {
  const system = isSystemPreset(p);
  return create(PresetSchema, {
    id: p.id,
    slug: p.slug,
    name: p.name,
    description: p.description,
    contentType: p.contentType,
    container: p.container,
    faststart: p.faststart,
    deliveryFormat: p.deliveryFormat,
    streaming: p.streaming && create(StreamingConfigSchema, p.streaming),
    video: create(VideoSettingsSchema, p.video),
    audio: create(AudioSettingsSchema, p.audio),
    qualityTier: p.qualityTier,
    estimatedCostPerMinute: estimatedCostPerMinute(p),
    systemPreset: system,
    createdAt: ts(p.createdAt),
    updatedAt: ts(p.updatedAt),
    archivedAt: system ? undefined : ts(p.archivedAt),
  });
}

/** A system preset for anyone; a stored one inside the caller's organization, and for an API key its app. */
async function visiblePreset(d: ServiceDeps, caller: Caller, id: string, field = "id"): Promise<AnyPreset> {
  new Check().id(field, id, Prefix.preset).done();
  const p = await findPreset(d.store, id);
  return p && isSystemPreset(p) ? p : visible(caller, p, "preset", id);
}

/** The app a new preset goes into: it must exist and be active. */
async function writableApp(d: ServiceDeps, caller: Caller, appId: string): Promise<AppRecord> {
  const app = await requireActingApp(d.directory, caller, appId);
  if (app.status !== "active") throw invalidField("app_id", "app is archived");
  return app;
}

function newRecord(app: AppRecord, settings: PresetSettings): PresetRecord {
  const now = Date.now();
  return { ...settings, id: newId(Prefix.preset), appId: app.id, organizationId: app.organizationId, createdAt: now, updatedAt: now };
}

// System presets list before custom ones, in catalog order: sort keys above any timestamp key.
const systemSort = (index: number) => `~${String(999 - index).padStart(3, "0")}`;

export function presetService(d: ServiceDeps): ServiceImpl<typeof PresetService> {
  return {
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      checkSlug(check, "slug", req.slug);
      checkName(check, "name", req.name);
      checkDescription(check, "description", req.description);
      if (!req.video) check.add("video", "is required");
      if (!req.audio) check.add("audio", "is required");
      if (caller.kind === "session") check.id("app_id", req.appId, Prefix.app, false);
      // Unset choices get their documented defaults: progressive delivery, standard tier, faststart on.
      const settings: PresetSettings = {
        slug: req.slug,
        name: req.name,
        ...(req.description !== "" ? { description: req.description } : {}),
        contentType: req.contentType,
        container: req.container,
        faststart: req.faststart ?? true,
        deliveryFormat: req.deliveryFormat || DeliveryFormat.PROGRESSIVE,
        ...(req.streaming ? { streaming: plainStreaming(req.streaming) } : {}),
        video: plainVideo(req.video),
        audio: plainAudio(req.audio),
        qualityTier: req.qualityTier || QualityTier.STANDARD,
      };
      if (req.video && req.audio) checkPresetSettings(check, settings);
      else if (req.container === Container.UNSPECIFIED) check.add("container", "is required");
      check.done();
      const app = await writableApp(d, caller, req.appId);
      return { preset: presetMessage(await insertPreset(d.store, newRecord(app, settings))) };
    },

    async get(req, ctx) {
      return { preset: presetMessage(await visiblePreset(d, callerOf(ctx.values), req.id)) };
    },

    async getBySlug(req, ctx) {
      const caller = callerOf(ctx.values);
      new Check().required("slug", req.slug).length("slug", req.slug, 1, 64).done();
      const app = await actingApp(d.directory, caller, "");
      const p = app ? await findPresetBySlug(d.store, app.id, req.slug) : SYSTEM_PRESETS.find((s) => s.slug === req.slug);
      if (!p) throw notFound("preset with slug", req.slug);
      return { preset: presetMessage(p) };
    },

    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      if (req.appId !== "") new Check().id("app_id", req.appId, Prefix.app).done();
      const app = await actingApp(d.directory, caller, req.appId);
      const includeSystem = req.includeSystem ?? true;
      const matches = (p: AnyPreset) =>
        (req.contentType === ContentType.UNSPECIFIED || p.contentType === req.contentType) &&
        (req.qualityTier === QualityTier.UNSPECIFIED || p.qualityTier === req.qualityTier) &&
        (req.videoCodec === VideoCodec.UNSPECIFIED || p.video.codec === req.videoCodec);
      const system = includeSystem ? SYSTEM_PRESETS.map((p, i) => ({ sort: systemSort(i), preset: p as AnyPreset })) : [];
      const custom = app ? (await appPresets(d.store, app.id)).map((r) => ({ sort: r.sort, preset: r.value as AnyPreset })) : [];
      const listId = `presets:${caller.org!.id}:${app?.id ?? ""}:${includeSystem}:${req.contentType}:${req.qualityTier}:${req.videoCodec}`;
      const page = d.paginator.pageOf(
        [...system, ...custom].filter((i) => matches(i.preset)),
        listId,
        req.pagination,
      );
      return { presets: page.items.map((i) => presetMessage(i.preset)), pagination: page.pagination };
    },

    async update(req, ctx) {
      const caller = callerOf(ctx.values);
      const found = await visiblePreset(d, caller, req.id);
      if (isSystemPreset(found)) throw failedPrecondition("system presets are read-only; Duplicate one to change it");
      const check = new Check();
      if (req.slug !== undefined) checkSlug(check, "slug", req.slug);
      if (req.name !== undefined) checkName(check, "name", req.name);
      checkDescription(check, "description", req.description);
      check.done();
      // A container change alone is blamed on the container, not on codecs the request did not send.
      const blame = {
        video: req.container !== Container.UNSPECIFIED && !req.video ? "container" : "video.codec",
        audio: req.container !== Container.UNSPECIFIED && !req.audio ? "container" : "audio.codec",
      };
      const preset = await changePreset(d.store, found.id, (current) => {
        if (current.archivedAt !== undefined) throw failedPrecondition(`preset ${current.id} is archived`);
        const { description: _old, ladder, streaming, ...rest } = current;
        const description = req.description ?? current.description ?? "";
        // A new delivery format starts from its default packaging unless the request sends streaming.
        const keptStreaming = req.deliveryFormat === DeliveryFormat.UNSPECIFIED || req.deliveryFormat === current.deliveryFormat ? streaming : undefined;
        const nextStreaming = req.streaming ? plainStreaming(req.streaming) : keptStreaming;
        const next: PresetRecord = {
          ...rest,
          ...(description !== "" ? { description } : {}),
          ...(req.slug !== undefined ? { slug: req.slug } : {}),
          ...(req.name !== undefined ? { name: req.name } : {}),
          ...(req.contentType !== ContentType.UNSPECIFIED ? { contentType: req.contentType } : {}),
          ...(req.container !== Container.UNSPECIFIED ? { container: req.container } : {}),
          ...(req.faststart !== undefined ? { faststart: req.faststart } : {}),
          ...(req.deliveryFormat !== DeliveryFormat.UNSPECIFIED ? { deliveryFormat: req.deliveryFormat } : {}),
          ...(nextStreaming ? { streaming: nextStreaming } : {}),
          // New video settings replace the whole video config, a duplicated ladder included.
          ...(req.video ? { video: plainVideo(req.video) } : ladder ? { ladder } : {}),
          ...(req.audio ? { audio: plainAudio(req.audio) } : {}),
          ...(req.qualityTier !== QualityTier.UNSPECIFIED ? { qualityTier: req.qualityTier } : {}),
        };
        const settingsCheck = new Check();
        checkPresetSettings(settingsCheck, next, blame);
        settingsCheck.done();
        return next;
      });
      return { preset: presetMessage(preset) };
    },

    async duplicate(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().id("source_id", req.sourceId, Prefix.preset);
      checkSlug(check, "slug", req.slug);
      checkName(check, "name", req.name);
      if (caller.kind === "session") check.id("app_id", req.appId, Prefix.app, false);
      check.done();
      const source = await visiblePreset(d, caller, req.sourceId, "source_id");
      const app = await writableApp(d, caller, req.appId);
      // The copy carries every encoding setting, a system ladder included, under its new slug and name.
      return { preset: presetMessage(await insertPreset(d.store, newRecord(app, { ...presetSettings(source), slug: req.slug, name: req.name }))) };
    },

    async archive(req, ctx) {
      const caller = callerOf(ctx.values);
      const found = await visiblePreset(d, caller, req.id);
      if (isSystemPreset(found)) throw failedPrecondition("system presets cannot be archived");
      const preset = await changePreset(d.store, found.id, (current) => {
        if (current.archivedAt !== undefined) throw failedPrecondition(`preset ${current.id} is already archived`);
        return { ...current, archivedAt: Date.now() };
      });
      return { preset: presetMessage(preset) };
    },
  };
}
