// The outcome a managed job reports to its video (actors/job/outcome.ts), without I/O.
import { describe, expect, it } from "vitest";
import type { DrmKeysData, JobRecord } from "./messages.js";
import { jobOutcome, streamPublished } from "./outcome.js";

describe("a managed job's outcome", () => {
  const job = (over: Partial<JobRecord> = {}): JobRecord =>
    ({
      id: "job_1",
      status: "completed",
      completedAt: 7000,
      updatedAt: 6000,
      inputMetadata: { durationMs: 8000 },
      outputs: [
        {
          id: "out_0",
          status: "completed",
          keyPrefix: "play/vid_1/out_0",
          main: "index.m3u8",
          sizeBytes: 1000,
          actualMicros: 40,
          renditions: [
            { name: "854x480", codec: "h264", width: 854, height: 480, sizeBytes: 800_000 },
            { name: "360x640", codec: "h264", width: 360, height: 640, sizeBytes: 100_000 },
          ],
        },
        { id: "out_1", status: "failed", keyPrefix: "play/vid_1/out_1", sizeBytes: 500, actualMicros: 0 },
      ],
      fees: [{ actualMicros: 2 }],
      thumbnailResults: [
        { key: "k/poster.jpg", mode: "single", format: "jpg", sizeBytes: 10 },
        { key: "k/loop.webp", mode: "animated", format: "webp", sizeBytes: 20 },
        { key: "k/loop.mp4", mode: "animated", format: "mp4", sizeBytes: 30 },
      ],
      ...over,
    }) as unknown as JobRecord;

  it("names the HLS playlist, measures each rendition's bitrate, sums the renditions' sizes and the money, finds the poster and loops", () => {
    const o = jobOutcome(job());
    // The renditions' 900,000 bytes: not the outputs' own sizes (playlists, other outputs) nor the thumbnails.
    expect(o).toMatchObject({
      jobId: "job_1",
      at: 7000,
      status: "completed",
      durationSeconds: 8,
      actualMicros: 42,
      playlistKey: "play/vid_1/out_0/index.m3u8",
      outputSizeBytes: 900_000,
      posterKey: "k/poster.jpg",
      hoverWebpKey: "k/loop.webp",
      hoverMp4Key: "k/loop.mp4",
    });
    // 800,000 bytes over 8 s: 800 kbps; a portrait rung is named by its short side.
    expect(o.renditions.map((r) => [r.resolution, r.bitrateKbps])).toEqual([
      ["480p", 800],
      ["360p", 100],
    ]);
  });

  it("without an HLS output, a duration or thumbnails: no playlist, 0 kbps, nothing named; canceled stays canceled", () => {
    const o = jobOutcome(
      job({
        status: "canceled",
        completedAt: undefined,
        inputMetadata: undefined,
        errorCode: "internal",
        errorMessage: "x",
        outputs: [{ id: "o", status: "completed", keyPrefix: "p", main: "video.mp4", sizeBytes: 5, renditions: [] }] as never,
        thumbnailResults: [],
        fees: [],
      }),
    );
    expect(o).toMatchObject({
      status: "canceled",
      at: 6000,
      durationSeconds: 0,
      actualMicros: 0,
      outputSizeBytes: 0,
      renditions: [],
      errorCode: "internal",
      errorMessage: "x",
    });
    expect(o.playlistKey).toBeUndefined();
    expect(o.posterKey).toBeUndefined();
    const zero = jobOutcome(job({ inputMetadata: { durationMs: 0 } as never }));
    expect(zero.renditions[0]!.bitrateKbps).toBe(0);
  });

  it("finds the poster and each loop by mode and format, wherever they come in the list", () => {
    const thumbnailResults = [
      { key: "k/frame-0.webp", mode: "interval", format: "webp", sizeBytes: 1 },
      { key: "k/loop.mp4", mode: "animated", format: "mp4", sizeBytes: 1 },
      { key: "k/loop.webp", mode: "animated", format: "webp", sizeBytes: 1 },
      { key: "k/poster.jpg", mode: "single", format: "jpg", sizeBytes: 1 },
    ];
    expect(jobOutcome(job({ thumbnailResults } as never))).toMatchObject({ posterKey: "k/poster.jpg", hoverWebpKey: "k/loop.webp", hoverMp4Key: "k/loop.mp4" });
    const noLoops = jobOutcome(job({ thumbnailResults: [thumbnailResults[0], thumbnailResults[3]] } as never));
    expect([noLoops.hoverWebpKey, noLoops.hoverMp4Key]).toEqual([undefined, undefined]);
  });

  it("keeps the job's ending: completed, partial and failed as they are; any other status is canceled", () => {
    const statusOf = (status: string) => jobOutcome(job({ status } as never)).status;
    expect(["completed", "partial", "failed", "canceled", "processing"].map(statusOf)).toEqual(["completed", "partial", "failed", "canceled", "canceled"]);
  });

  it("carries the stream's content keys, and none for a stream without them", () => {
    const drm: DrmKeysData = { scheme: "cbcs", clearKey: false, kids: [{ trackClass: "hd", kid: "00112233445566778899aabbccddeeff" }], sealed: "sealed" };
    const [hls, failed] = job().outputs;
    expect(jobOutcome(job({ outputs: [{ ...hls, drm }, failed] } as never)).drm).toEqual(drm);
    expect("drm" in jobOutcome(job())).toBe(false);
  });

  it("takes a DASH manifest when there is no HLS playlist, and the HLS playlist over an earlier DASH one", () => {
    const dash = { id: "out_d", status: "completed", keyPrefix: "play/vid_1/out_d", main: "manifest.mpd", sizeBytes: 1, renditions: [] };
    expect(jobOutcome(job({ outputs: [dash] } as never)).playlistKey).toBe("play/vid_1/out_d/manifest.mpd");
    expect(jobOutcome(job({ outputs: [dash, ...job().outputs] } as never)).playlistKey).toBe("play/vid_1/out_0/index.m3u8");
  });

  it("a progressive stream while it encodes: its playlist, the rungs complete so far and their sizes, its keys; nothing before it plays", () => {
    const drm: DrmKeysData = { scheme: "aes128", clearKey: true, kids: [{ trackClass: "sd", kid: "00112233445566778899aabbccddeeff" }], sealed: "sealed" };
    const playing = {
      id: "out_0",
      status: "processing",
      keyPrefix: "play/vid_1/out_0",
      main: "index.m3u8",
      playableAt: 3000,
      renditions: [{ name: "360p", codec: "h264", width: 640, height: 360, sizeBytes: 400_000 }],
      drm,
    };
    const running = job({ status: "processing", outputs: [{ id: "out_x", status: "processing", keyPrefix: "x" }, playing] } as never);
    expect(streamPublished(running, "out_0")).toStrictEqual({
      jobId: "job_1",
      at: 3000,
      playlistKey: "play/vid_1/out_0/index.m3u8",
      durationSeconds: 8,
      renditions: [{ resolution: "360p", codec: "h264", bitrateKbps: 400, width: 640, height: 360, sizeBytes: 400_000 }],
      outputSizeBytes: 400_000,
      drm,
    });
    const clear = streamPublished(job({ outputs: [{ ...playing, drm: undefined, renditions: undefined }] } as never), "out_0")!;
    expect([clear.renditions, clear.outputSizeBytes, "drm" in clear]).toEqual([[], 0, false]);
    expect(streamPublished(job({ outputs: [{ ...playing, playableAt: undefined }] } as never), "out_0")).toBeUndefined();
    expect(streamPublished(job({ outputs: [{ ...playing, main: undefined }] } as never), "out_0")).toBeUndefined();
    expect(streamPublished(running, "out_x")).toBeUndefined();
    expect(streamPublished(running, "out_missing")).toBeUndefined();
  });
});
