// renderThumbnails with real ffmpeg on a generated clip: each mode and format, sizes, times, the sprite index.
import { create } from "@bufbuild/protobuf";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlanInput } from "../../encoder-node/plan.js";
import { probe } from "../../encoder-node/probe.js";
import { renderThumbnails } from "../../encoder-node/thumbnails.js";
import { ThumbnailFormat, ThumbnailMode, ThumbnailSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import { durationOf, ffprobeJson, makeTestInput, videoOf } from "../media.js";

type Init = Parameters<typeof create<typeof ThumbnailSpecSchema>>[1];
const spec = (init: Init) => create(ThumbnailSpecSchema, init);
const root = mkdtempSync(path.join(tmpdir(), "thumbs-spec-"));
let input: PlanInput;
let n = 0;

describe("renderThumbnails", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    const file = await makeTestInput(path.join(root, "in.mp4"), { seconds: 6, width: 640, height: 360, fps: 25, audio: false });
    input = { file, probe: await probe(file) };
  }, 30_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const render = async (specs: Init[]) => {
    const dir = path.join(root, `t${++n}`);
    mkdirSync(dir, { recursive: true });
    const artifacts = await renderThumbnails(specs.map(spec), input, { dir });
    for (const a of artifacts) {
      expect(existsSync(path.join(dir, a.file))).toBe(true);
      expect(a.sizeBytes).toBe(statSync(path.join(dir, a.file)).size);
    }
    return { dir, artifacts };
  };

  it("single: 10% in by default, jpg at the input size; png and webp scaled from one side", async () => {
    const { dir, artifacts } = await render([
      { mode: ThumbnailMode.SINGLE },
      { mode: ThumbnailMode.SINGLE, format: ThumbnailFormat.PNG, width: 320, timeSeconds: 2 },
      { mode: ThumbnailMode.SINGLE, format: ThumbnailFormat.WEBP, height: 90 },
    ]);
    expect(artifacts.map((a) => [a.file, a.mode, a.format, a.width, a.height, a.timeSeconds, a.thumbnailIndex, a.index])).toEqual([
      ["thumbnail-0.jpg", "single", "jpg", 640, 360, 0.6, 0, 0],
      ["thumbnail-1.png", "single", "png", 320, 180, 2, 1, 0],
      ["thumbnail-2.webp", "single", "webp", 160, 90, 0.6, 2, 0],
    ]);
    for (const a of artifacts) expect(videoOf(await ffprobeJson(path.join(dir, a.file)))).toMatchObject({ width: a.width, height: a.height });
  });

  it("interval: one image every interval_seconds, at most count", async () => {
    const { artifacts } = await render([
      { mode: ThumbnailMode.INTERVAL, intervalSeconds: 2, width: 160 },
      { mode: ThumbnailMode.INTERVAL, intervalSeconds: 1, count: 3, timeSeconds: 1 },
    ]);
    expect(artifacts.filter((a) => a.thumbnailIndex === 0).map((a) => [a.file, a.index, a.timeSeconds, a.width, a.height])).toEqual([
      ["thumbnail-0-000.jpg", 0, 0, 160, 90],
      ["thumbnail-0-001.jpg", 1, 2, 160, 90],
      ["thumbnail-0-002.jpg", 2, 4, 160, 90],
    ]);
    expect(artifacts.filter((a) => a.thumbnailIndex === 1).map((a) => a.timeSeconds)).toEqual([1, 2, 3]);
  });

  it("sprite: a grid image and a WebVTT index of its tiles", async () => {
    const { dir, artifacts } = await render([{ mode: ThumbnailMode.SPRITE, count: 6 }]);
    expect(artifacts).toHaveLength(1);
    const sprite = artifacts[0]!;
    // 6 tiles of 160x90 in 3 columns and 2 rows.
    expect([sprite.file, sprite.width, sprite.height, sprite.indexFile]).toEqual(["sprite-0.jpg", 480, 180, "sprite-0.vtt"]);
    expect(videoOf(await ffprobeJson(path.join(dir, sprite.file)))).toMatchObject({ width: 480, height: 180 });
    const vtt = readFileSync(path.join(dir, sprite.indexFile!), "utf8");
    expect(vtt.startsWith("WEBVTT\n\n")).toBe(true);
    expect(vtt).toContain("00:00:00.000 --> 00:00:01.000\nsprite-0.jpg#xywh=0,0,160,90");
    expect(vtt).toContain("00:00:05.000 --> 00:00:06.000\nsprite-0.jpg#xywh=320,90,160,90");
  });

  it("animated: a looping webp and a muted mp4; a webp longer than 10 s is skipped", async () => {
    const { dir, artifacts } = await render([
      { mode: ThumbnailMode.ANIMATED, durationSeconds: 2, fps: 5, width: 160, timeSeconds: 1 },
      { mode: ThumbnailMode.ANIMATED, format: ThumbnailFormat.MP4, durationSeconds: 2, width: 161 },
    ]);
    expect(artifacts.map((a) => [a.file, a.format, a.width, a.height, a.timeSeconds])).toEqual([
      ["animated-0.webp", "webp", 160, 90, 1],
      ["animated-1.mp4", "mp4", 162, 90, 0],
    ]);
    expect(readFileSync(path.join(dir, "animated-0.webp")).includes(Buffer.from("ANIM"))).toBe(true);
    const mp4 = await ffprobeJson(path.join(dir, "animated-1.mp4"));
    expect(mp4.streams.map((s) => s.codec_type)).toEqual(["video"]);
    expect(Math.abs(durationOf(mp4) - 2)).toBeLessThan(0.3);
    const longFile = await makeTestInput(path.join(root, "long.mp4"), { seconds: 12, width: 160, height: 90, fps: 10, audio: false });
    const long = { file: longFile, probe: await probe(longFile) };
    const loops = [
      spec({ mode: ThumbnailMode.ANIMATED, durationSeconds: 11 }),
      spec({ mode: ThumbnailMode.ANIMATED, format: ThumbnailFormat.MP4, durationSeconds: 11 }),
    ];
    expect((await renderThumbnails(loops, long, { dir })).map((a) => a.file)).toEqual(["animated-1.mp4"]);
  });

  it("refuses an input without video", async () => {
    await expect(
      renderThumbnails([spec({ mode: ThumbnailMode.SINGLE })], { file: input.file, probe: { ...input.probe, video: undefined } }, { dir: root }),
    ).rejects.toMatchObject({ code: "input_unsupported" });
  });
});
