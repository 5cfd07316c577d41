// PresetService through the HTTP API: the system catalog, custom presets with unique slugs, their
// wire shape and price estimate, list filters and paging, update, duplicate, archive, the spec's
// errors, and scoping to the caller's app and organization.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, errorDetails, startHarness, type Auth, type Harness, type Reply } from "../harness.js";

let h: Harness;
let key: Auth;
let owner: Auth;
let app2 = "";

async function expectError(r: Reply, code: string, field?: string): Promise<void> {
  const shown = JSON.stringify(r.body);
  expect(r.status, shown).not.toBe(500);
  expect(r.body?.code, shown).toBe(code);
  const details = await errorDetails(r.body);
  if (field !== undefined)
    expect(
      details.fieldViolations.map((v) => v.field),
      shown,
    ).toContain(field);
}

const pause = () => new Promise((r) => setTimeout(r, 3));
let n = 0;
/** A valid H.264 720p MP4 preset body with a fresh slug. */
const body = (over: Record<string, unknown> = {}) => ({
  slug: `p_${Date.now().toString(36)}_${++n}`,
  name: `Preset ${n}`,
  container: "mp4",
  video: { codec: "h264", resolution: "720p", bitrate_mode: "crf", crf: 23 },
  audio: { codec: "aac", bitrate_kbps: 128 },
  ...over,
});
const create = async (over: Record<string, unknown> = {}, auth: Auth = key) => (await ok(call(h.base, "PresetService/Create", body(over), auth))).preset;

beforeAll(async () => {
  h = await startHarness();
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  owner = { bearer: await h.token(h.boot.user_email), org: h.boot.organization_id };
  app2 = (await ok(call(h.base, "AppService/Create", { name: "presets second app" }, owner))).app.id;
});
afterAll(async () => {
  await h?.server.close();
});

describe("system presets", () => {
  it("are served read-only from the catalog with a price per encoded minute", async () => {
    const got = await ok(call(h.base, "PresetService/Get", { id: "pst_system_web_mp4" }, key));
    expect(got.preset).toEqual({
      id: "pst_system_web_mp4",
      slug: "system_web_mp4",
      name: "Web MP4 1080p",
      description: expect.any(String),
      content_type: "film",
      container: "mp4",
      faststart: true,
      delivery_format: "progressive",
      streaming: null,
      video: {
        codec: "h264",
        resolution: "1080p",
        width: 0,
        height: 0,
        framerate: 0,
        bitrate_mode: "crf",
        crf: 23,
        bitrate_kbps: 0,
        max_bitrate_kbps: 8000,
        buffer_size_kbps: 16000,
        profile: "high",
        level: "4.1",
        encoder_preset: "medium",
        tune: "",
        keyint: 0,
        refs: 0,
      },
      audio: { codec: "aac", bitrate_kbps: 128, sample_rate: 48000, channels: 2, normalize: false },
      quality_tier: "standard",
      estimated_cost_per_minute: 0.009,
      system_preset: true,
      created_at: "2025-01-01T00:00:00.000Z",
      updated_at: "2025-01-01T00:00:00.000Z",
      archived_at: null,
    });
    const hls = (await ok(call(h.base, "PresetService/GetBySlug", { slug: "system_hls_h264" }, owner))).preset;
    expect(hls).toMatchObject({ id: "pst_system_hls_h264", container: "ts", delivery_format: "hls", estimated_cost_per_minute: 0.023 });
    expect(hls.streaming).toEqual({
      hls: { segment_duration_seconds: 6, playlist_type: "vod", segment_format: "ts", manifest_name: "index", iframe_playlists: false },
      dash: null,
      segments: null,
    });
    const audio = (await ok(call(h.base, "PresetService/Get", { id: "pst_system_audio_aac" }, key))).preset;
    expect(audio).toMatchObject({ video: { codec: "unspecified" }, audio: { codec: "aac", bitrate_kbps: 192 }, estimated_cost_per_minute: 0.001 });
  });

  it("cannot be updated or archived", async () => {
    await expectError(await call(h.base, "PresetService/Update", { id: "pst_system_web_mp4", name: "mine now" }, key), "failed_precondition");
    await expectError(await call(h.base, "PresetService/Archive", { id: "pst_system_web_mp4" }, owner), "failed_precondition");
    expect((await ok(call(h.base, "PresetService/Get", { id: "pst_system_web_mp4" }, key))).preset.name).toBe("Web MP4 1080p");
  });
});

describe("custom presets", () => {
  it("are created with defaults, shown in the spec's wire format, and priced", async () => {
    const p = await create({
      slug: "wire_shape",
      content_type: "animation",
      video: { codec: "h264", resolution: "720p", crf: 20, tune: "animation", bframes: 0 },
    });
    expect(p).toEqual({
      id: expect.stringMatching(/^pst_[A-Za-z0-9]+$/),
      slug: "wire_shape",
      name: expect.any(String),
      content_type: "animation",
      container: "mp4",
      faststart: true,
      delivery_format: "progressive",
      streaming: null,
      video: {
        codec: "h264",
        resolution: "720p",
        width: 0,
        height: 0,
        framerate: 0,
        bitrate_mode: "unspecified",
        crf: 20,
        bitrate_kbps: 0,
        max_bitrate_kbps: 0,
        buffer_size_kbps: 0,
        profile: "",
        level: "",
        encoder_preset: "",
        tune: "animation",
        keyint: 0,
        bframes: 0,
        refs: 0,
      },
      audio: { codec: "aac", bitrate_kbps: 128, sample_rate: 0, channels: 0, normalize: false },
      quality_tier: "standard",
      estimated_cost_per_minute: 0.006,
      system_preset: false,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      archived_at: null,
    });
    expect(p).not.toHaveProperty("description");
    expect((await ok(call(h.base, "PresetService/Get", { id: p.id }, owner))).preset).toEqual(p);
    expect((await ok(call(h.base, "PresetService/GetBySlug", { slug: "wire_shape" }, key))).preset.id).toBe(p.id);

    const premium60 = await create({ quality_tier: "premium", video: { codec: "h265", resolution: "2160p", framerate: 60 } });
    expect(premium60.estimated_cost_per_minute).toBe(0.135); // 0.06 × 150% × 150%
    const custom = await create({ video: { codec: "h264", width: 1080, height: 1920 } });
    expect(custom.estimated_cost_per_minute).toBe(0.009);
    // A size that follows the input cannot be priced before there is one.
    expect(await create({ video: { codec: "av1", crf: 30 } })).not.toHaveProperty("estimated_cost_per_minute");
  });

  it("refuses a duplicate slug in the same app with already_exists on slug, but allows it in another app", async () => {
    await create({ slug: "taken_once" });
    await expectError(await call(h.base, "PresetService/Create", body({ slug: "taken_once" }), key), "already_exists", "slug");
    await expectError(await call(h.base, "PresetService/Create", body({ slug: "system_web_mp4" }), key), "already_exists", "slug");
    const other = await create({ slug: "taken_once", app_id: app2 }, owner);
    expect(other.slug).toBe("taken_once");
  });

  it("names every bad field", async () => {
    const r = await call(
      h.base,
      "PresetService/Create",
      {
        slug: "Bad Slug!",
        name: "",
        description: "x".repeat(1025),
        container: "webm",
        delivery_format: "hls",
        video: { codec: "vp9", resolution: "1080p", crf: 51, width: 100, keyint: 700, bitrate_mode: "cbr" },
        audio: { codec: "aac", bitrate_kbps: 600, channels: 9 },
      },
      key,
    );
    await expectError(r, "invalid_argument");
    const fields = (await errorDetails(r.body)).fieldViolations.map((v) => v.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        "slug",
        "name",
        "description",
        "delivery_format",
        "audio.codec",
        "video.crf",
        "video.width",
        "video.resolution",
        "video.keyint",
        "video.bitrate_kbps",
        "audio.bitrate_kbps",
        "audio.channels",
      ]),
    );
    await expectError(
      await call(h.base, "PresetService/Create", { slug: "no_container", name: "x", video: { codec: "h264" }, audio: { codec: "aac" } }, key),
      "invalid_argument",
      "container",
    );
    await expectError(await call(h.base, "PresetService/Create", { slug: "no_video", name: "x", container: "mp4" }, key), "invalid_argument", "video");
    await expectError(await call(h.base, "PresetService/Create", body({ video: { codec: "h264", crf: 14 } }), key), "invalid_argument", "video.crf");
    await expectError(
      await call(h.base, "PresetService/Create", body({ video: { codec: "h264", profile: "main10" } }), key),
      "invalid_argument",
      "video.profile",
    );
    await expectError(await call(h.base, "PresetService/Create", body({ container: "mov", audio: { codec: "opus" } }), key), "invalid_argument", "audio.codec");
    await expectError(await call(h.base, "PresetService/Create", body({ video: { codec: "hevc" } }), key), "invalid_argument", "video.codec");
    await expectError(await call(h.base, "PresetService/Get", { id: "nope" }, key), "invalid_argument", "id");
    await expectError(await call(h.base, "PresetService/Get", { id: "pst_missing" }, key), "not_found");
    await expectError(await call(h.base, "PresetService/GetBySlug", { slug: "" }, key), "invalid_argument", "slug");
    await expectError(await call(h.base, "PresetService/GetBySlug", { slug: "never_made" }, key), "not_found");
    await expectError(await call(h.base, "PresetService/List", { pagination: { limit: 0 } }, key), "invalid_argument", "pagination.limit");
  });

  it("makes audio-only and streaming presets", async () => {
    const audio = await create({ container: "mp4", video: {}, audio: { codec: "aac", bitrate_kbps: 96 } });
    expect(audio).toMatchObject({ video: { codec: "unspecified" }, estimated_cost_per_minute: 0.001 });
    const hls = await create({
      container: "mp4",
      delivery_format: "hls",
      streaming: { hls: { segment_duration_seconds: 4, segment_format: "fmp4" } },
      video: { codec: "h265", resolution: "1080p", bitrate_mode: "vbr", bitrate_kbps: 4000, max_bitrate_kbps: 6000, buffer_size_kbps: 8000 },
    });
    expect(hls.streaming.hls).toMatchObject({ segment_duration_seconds: 4, segment_format: "fmp4" });
    await expectError(await call(h.base, "PresetService/Create", body({ streaming: { hls: {} } }), key), "invalid_argument", "streaming");
  });
});

describe("List", () => {
  it("lists system presets first, then the app's own newest first, with filters and cursor paging", async () => {
    const made: string[] = [];
    for (const codec of ["vp9", "vp9", "av1"]) {
      made.push(
        (
          await create(
            codec === "vp9"
              ? { container: "webm", video: { codec, resolution: "720p" }, audio: { codec: "opus" }, quality_tier: "economy", app_id: app2 }
              : { video: { codec, resolution: "480p" }, app_id: app2 },
            owner,
          )
        ).id,
      );
      await pause();
    }
    const all = await ok(call(h.base, "PresetService/List", { app_id: app2 }, owner));
    const ids = all.presets.map((p: any) => p.id);
    expect(ids.slice(0, 7).every((id: string) => id.startsWith("pst_system_"))).toBe(true);
    expect(ids[0]).toBe("pst_system_web_mp4");
    expect(ids.slice(7, 10)).toEqual([...made].reverse());
    expect(all.pagination).toMatchObject({ next_cursor: "", total_count: ids.length });

    const vp9 = await ok(call(h.base, "PresetService/List", { app_id: app2, video_codec: "vp9" }, owner));
    expect(vp9.presets.map((p: any) => p.id)).toEqual(["pst_system_webm_vp9", made[1], made[0]]);
    const economy = await ok(call(h.base, "PresetService/List", { app_id: app2, quality_tier: "economy", include_system: false }, owner));
    expect(economy.presets.map((p: any) => p.id)).toEqual([made[1], made[0]]);
    const none = await ok(call(h.base, "PresetService/List", { app_id: app2, content_type: "gaming" }, owner));
    expect(none.presets).toEqual([]);

    const seen: string[] = [];
    let page = await ok(call(h.base, "PresetService/List", { app_id: app2, pagination: { limit: 4 } }, owner));
    seen.push(...page.presets.map((p: any) => p.id));
    while (page.pagination.next_cursor !== "") {
      page = await ok(call(h.base, "PresetService/List", { app_id: app2, pagination: { limit: 4, cursor: page.pagination.next_cursor } }, owner));
      seen.push(...page.presets.map((p: any) => p.id));
    }
    expect(seen).toEqual(ids);
    // A cursor is bound to its list: other filters refuse it.
    const first = await ok(call(h.base, "PresetService/List", { app_id: app2, pagination: { limit: 2 } }, owner));
    await expectError(
      await call(h.base, "PresetService/List", { app_id: app2, video_codec: "vp9", pagination: { cursor: first.pagination.next_cursor } }, owner),
      "invalid_argument",
      "pagination.cursor",
    );
  });
});

describe("Update", () => {
  it("changes only the fields sent, replaces whole video and audio, and keeps slugs unique", async () => {
    const p = await create({ description: "before", video: { codec: "h264", resolution: "720p", crf: 23, profile: "high" } });
    await pause();
    const renamed = (await ok(call(h.base, "PresetService/Update", { id: p.id, name: "Renamed", slug: `${p.slug}_v2`, quality_tier: "premium" }, key))).preset;
    expect(renamed).toMatchObject({
      name: "Renamed",
      slug: `${p.slug}_v2`,
      quality_tier: "premium",
      description: "before",
      video: { crf: 23, profile: "high" },
      estimated_cost_per_minute: 0.009,
    });
    expect(renamed.updated_at > p.updated_at).toBe(true);
    expect(renamed.created_at).toBe(p.created_at);
    expect((await ok(call(h.base, "PresetService/GetBySlug", { slug: `${p.slug}_v2` }, key))).preset.id).toBe(p.id);
    await expectError(await call(h.base, "PresetService/GetBySlug", { slug: p.slug }, key), "not_found");

    const replaced = (await ok(call(h.base, "PresetService/Update", { id: p.id, video: { codec: "h265", resolution: "1080p" }, description: "" }, key))).preset;
    expect(replaced.video).toMatchObject({ codec: "h265", resolution: "1080p", crf: 0, profile: "" });
    expect(replaced).not.toHaveProperty("description");

    const other = await create();
    await expectError(await call(h.base, "PresetService/Update", { id: other.id, slug: `${p.slug}_v2` }, key), "already_exists", "slug");
    // A container that no longer fits the unchanged codecs is blamed on the container.
    await expectError(await call(h.base, "PresetService/Update", { id: other.id, container: "webm" }, key), "invalid_argument", "container");
    await expectError(await call(h.base, "PresetService/Update", { id: other.id, video: { codec: "h264", crf: 99 } }, key), "invalid_argument", "video.crf");
    await expectError(await call(h.base, "PresetService/Update", { id: other.id, name: "" }, key), "invalid_argument", "name");
    const moved = (
      await ok(
        call(h.base, "PresetService/Update", { id: other.id, container: "webm", video: { codec: "vp9", resolution: "720p" }, audio: { codec: "opus" } }, key),
      )
    ).preset;
    expect(moved).toMatchObject({ container: "webm", video: { codec: "vp9" }, audio: { codec: "opus" }, estimated_cost_per_minute: 0.0096 });
  });
});

describe("Duplicate", () => {
  it("copies a system ladder or a custom preset into a new custom preset", async () => {
    const copy = (await ok(call(h.base, "PresetService/Duplicate", { source_id: "pst_system_hls_h264", slug: "my_hls", name: "My HLS" }, key))).preset;
    const source = (await ok(call(h.base, "PresetService/Get", { id: "pst_system_hls_h264" }, key))).preset;
    expect(copy).toMatchObject({ slug: "my_hls", name: "My HLS", system_preset: false, archived_at: null });
    expect(copy.id).not.toBe(source.id);
    for (const f of ["container", "delivery_format", "streaming", "video", "audio", "quality_tier", "content_type", "description"])
      expect(copy[f], f).toEqual(source[f]);
    // The copy keeps every rung of the ladder, so it costs what its source costs.
    expect(copy.estimated_cost_per_minute).toBe(source.estimated_cost_per_minute);

    const again = (await ok(call(h.base, "PresetService/Duplicate", { source_id: copy.id, slug: "my_hls_2", name: "My HLS 2", app_id: app2 }, owner))).preset;
    expect(again.video).toEqual(copy.video);
    await expectError(await call(h.base, "PresetService/Duplicate", { source_id: copy.id, slug: "my_hls", name: "x" }, key), "already_exists", "slug");
    await expectError(await call(h.base, "PresetService/Duplicate", { source_id: "", slug: "ab", name: "" }, key), "invalid_argument", "source_id");
    await expectError(await call(h.base, "PresetService/Duplicate", { source_id: "pst_missing", slug: "dup_missing", name: "x" }, key), "not_found");
  });
});

describe("Archive", () => {
  it("soft-deletes: still readable, out of lists, not updatable, and its slug can be reused", async () => {
    const p = await create({ slug: "to_archive" });
    const archived = (await ok(call(h.base, "PresetService/Archive", { id: p.id }, key))).preset;
    expect(archived.archived_at).toMatch(/^\d{4}-/);
    expect((await ok(call(h.base, "PresetService/Get", { id: p.id }, key))).preset.archived_at).toBe(archived.archived_at);
    const list = await ok(call(h.base, "PresetService/List", { include_system: false, pagination: { limit: 100 } }, key));
    expect(list.presets.map((x: any) => x.id)).not.toContain(p.id);
    await expectError(await call(h.base, "PresetService/Archive", { id: p.id }, key), "failed_precondition");
    await expectError(await call(h.base, "PresetService/Update", { id: p.id, name: "back" }, key), "failed_precondition");
    expect((await ok(call(h.base, "PresetService/GetBySlug", { slug: "to_archive" }, key))).preset.id).toBe(p.id);
    const reused = await create({ slug: "to_archive" });
    expect((await ok(call(h.base, "PresetService/GetBySlug", { slug: "to_archive" }, key))).preset.id).toBe(reused.id);
  });
});

describe("scoping", () => {
  it("keeps presets inside their app for keys and inside their organization for everyone", async () => {
    const inApp2 = await create({ app_id: app2 }, owner);
    // The session without app_id works in the organization's first app: the key's app.
    const sessionDefault = await create({}, owner);
    expect((await ok(call(h.base, "PresetService/Get", { id: sessionDefault.id }, key))).preset.id).toBe(sessionDefault.id);
    await expectError(await call(h.base, "PresetService/Get", { id: inApp2.id }, key), "not_found");
    await expectError(await call(h.base, "PresetService/Update", { id: inApp2.id, name: "x" }, key), "not_found");
    await expectError(await call(h.base, "PresetService/Archive", { id: inApp2.id }, key), "not_found");
    await expectError(await call(h.base, "PresetService/Duplicate", { source_id: inApp2.id, slug: "stolen", name: "x" }, key), "not_found");
    await expectError(await call(h.base, "PresetService/List", { app_id: app2 }, key), "permission_denied");
    await expectError(await call(h.base, "PresetService/Create", body({ app_id: app2 }), key), "permission_denied");
    expect((await ok(call(h.base, "PresetService/Get", { id: inApp2.id }, owner))).preset.id).toBe(inApp2.id);

    // Another organization sees only the system catalog.
    const bob = await h.token("bob@presets.test");
    const bobId = (await ok(call(h.base, "UserService/GetMe", {}, { bearer: bob }))).user.user.id;
    await ok(call(h.base, "UserService/DecideApproval", { user_id: bobId, decision: "approved" }, { bearer: owner.bearer! }));
    const bOrg = (await ok(call(h.base, "OrganizationService/Create", { name: "Preset B", slug: "preset-b" }, { bearer: bob }))).organization.id;
    const b: Auth = { bearer: bob, org: bOrg };
    await expectError(await call(h.base, "PresetService/Get", { id: inApp2.id }, b), "not_found");
    await expectError(await call(h.base, "PresetService/Duplicate", { source_id: inApp2.id, slug: "stolen", name: "x" }, b), "not_found");
    await expectError(await call(h.base, "PresetService/List", { app_id: app2 }, b), "not_found");
    await expectError(await call(h.base, "PresetService/Create", body(), b), "failed_precondition");
    const bList = await ok(call(h.base, "PresetService/List", {}, b));
    expect(bList.presets.every((p: any) => p.system_preset)).toBe(true);
    expect((await ok(call(h.base, "PresetService/GetBySlug", { slug: "system_webm_vp9" }, b))).preset.id).toBe("pst_system_webm_vp9");
    const bApp = (await ok(call(h.base, "AppService/Create", { name: "B app" }, b))).app.id;
    const bPreset = await create({ slug: "taken_once" }, b);
    expect(bPreset.slug).toBe("taken_once");
    await expectError(await call(h.base, "PresetService/Get", { id: bPreset.id }, key), "not_found");
    expect((await ok(call(h.base, "PresetService/List", { app_id: bApp, include_system: false }, b))).presets.map((p: any) => p.id)).toEqual([bPreset.id]);
  });
});
