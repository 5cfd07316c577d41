// The edge's counting: the kind of each playable file by its name, and a route's answers by kind,
// status class and bytes, its refusals by the reason they name (or their status's meaning).
import { describe, expect, it } from "vitest";
import { metricValue as value } from "../src/metrics.fixtures.js";
import { EdgeError, type EdgeRequest, type EdgeResponse } from "./edge.js";
import { EdgeRefused, measured, playbackKind } from "./edge-metrics.js";

describe("playbackKind", () => {
  it("names each file of a playable directory", () => {
    const master = "play/vid_1/out_1/index.m3u8";
    const kinds = Object.fromEntries(
      [
        master,
        "play/vid_1/out_1/720p/index.m3u8",
        "play/vid_1/out_1/720p/index_iframes.m3u8",
        "play/vid_1/out_2/manifest.mpd",
        "play/vid_1/out_1/720p/seg_00001.ts",
        "play/vid_1/out_1/720p/seg_00001.m4s",
        "play/vid_1/out_1/720p/init.mp4",
        "play/vid_1/out_2/init-0.m4s",
        "play/vid_1/out_2/chunk-0-00001.m4s",
        "play/vid_1/out_1/drm/0123456789abcdef0123456789abcdef.key",
        "play/vid_1/out_1/subtitles/track_0.vtt",
        "play/vid_1/poster.jpg",
        "play/vid_1/hover.webp",
        "play/vid_1/out_3/1080p.mp4",
        "play/vid_1/out_1/notes.json",
      ].map((f) => [f, playbackKind(f, master)]),
    );
    expect(Object.values(kinds)).toEqual([
      "master_playlist",
      "media_playlist",
      "iframe_playlist",
      "dash_manifest",
      "segment",
      "segment",
      "init",
      "init",
      "segment",
      "key",
      "subtitle",
      "image",
      "image",
      "download",
      "file",
    ]);
    // Before the token passed, the video (and its master) is unknown: a playlist is a media playlist.
    expect(playbackKind(master, undefined)).toBe("media_playlist");
  });
});

const request = (method = "GET") => ({ method, header: new Headers(), params: {} }) as unknown as EdgeRequest;

describe("measured", () => {
  it("counts answers by kind and status class, body bytes by Content-Length or length, none for HEAD", async () => {
    const at = async () => ({
      ok: await value("media_edge_requests_total", { kind: "segment", status_class: "2xx" }),
      notModified: await value("media_edge_requests_total", { kind: "segment", status_class: "3xx" }),
      bytes: await value("media_edge_response_bytes_total", { kind: "segment" }),
    });
    const answers: EdgeResponse[] = [
      { status: 200, header: new Headers({ "content-length": "1000" }), body: new Uint8Array(0) },
      { status: 206, header: new Headers(), body: new Uint8Array(24) },
      { status: 304, header: new Headers() },
    ];
    let next = 0;
    const route = measured({ method: "GET", pattern: "/p/*", handler: async () => answers[next++ % answers.length]! }, "segment");
    const before = await at();
    for (let i = 0; i < 3; i++) await route.handler(request());
    await route.handler(request("HEAD")); // the 200 again, without its body
    const after = await at();
    expect(after.ok - before.ok).toBe(3);
    expect(after.notModified - before.notModified).toBe(1);
    expect(after.bytes - before.bytes).toBe(1024);
  });

  it("counts a refusal by the reason it names, else by its status's meaning, and an unexpected failure as 5xx", async () => {
    const at = async () => ({
      expired: await value("media_edge_refusals_total", { reason: "token_expired" }),
      notFound: await value("media_edge_refusals_total", { reason: "not_found" }),
      refused: await value("media_edge_requests_total", { kind: "master_playlist", status_class: "4xx" }),
      failed: await value("media_edge_requests_total", { kind: "master_playlist", status_class: "5xx" }),
    });
    const errors = [new EdgeRefused(403, "token_expired", "playback refused (expired)"), new EdgeError(404, "no such file"), new Error("disk gone")];
    let next = 0;
    const route = measured(
      {
        method: "GET",
        pattern: "/p/*",
        handler: () => {
          throw errors[next++]!;
        },
      },
      () => "master_playlist",
    );
    const before = await at();
    for (const e of errors) await expect(route.handler(request())).rejects.toBe(e);
    const after = await at();
    expect(after.expired - before.expired).toBe(1);
    expect(after.notFound - before.notFound).toBe(1);
    expect(after.refused - before.refused).toBe(2);
    expect(after.failed - before.failed).toBe(1);
  });
});
