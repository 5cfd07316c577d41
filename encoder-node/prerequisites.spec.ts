import { describe, expect, it } from "vitest";
import { encoderReadiness, ffmpegVersion, standing } from "./prerequisites.js";

describe("encoder prerequisites", () => {
  it("reads ffmpeg's version from its first line; git builds have none", () => {
    expect(ffmpegVersion("ffmpeg version 5.1.6-0+deb12u1 Copyright (c) 2000-2024 the FFmpeg developers")).toEqual([5, 1]);
    expect(ffmpegVersion("ffprobe version n6.1.1 Copyright (c) 2007-2023")).toEqual([6, 1]);
    expect(ffmpegVersion("ffmpeg version 4.2.7-0ubuntu0.1")).toEqual([4, 2]);
    expect(ffmpegVersion("ffmpeg version N-112345-gabcdef Copyright")).toBeUndefined();
  });

  it("stands when every required part is there; names what is missing otherwise", () => {
    const ok = { name: "ffmpeg", required: true, ok: true, detail: "ffmpeg version 5.1" };
    const optional = { name: "recogniser", required: false, ok: false, detail: "not installed" };
    expect(standing([ok, optional])).toEqual({ ok: true });
    expect(standing([ok, { name: "ffprobe", required: true, ok: false, detail: "ffprobe is not installed" }, optional])).toEqual({
      ok: false,
      message: "ffprobe is not installed",
    });
  });
});

describe("encoder readiness", () => {
  it("is ready when the node takes tasks and Shaka Packager is there; names each missing part otherwise", () => {
    const saved = process.env.MEDIA_PACKAGER;
    try {
      process.env.MEDIA_PACKAGER = process.execPath; // a file that exists
      expect(encoderReadiness({ health: () => ({ ok: true }) })).toEqual({ ok: true });
      expect(encoderReadiness({ health: () => ({ ok: false, message: "ffmpeg is not installed" }) })).toEqual({
        ok: false,
        message: "ffmpeg is not installed",
      });
      process.env.MEDIA_PACKAGER = "/nonexistent/packager";
      const missing = encoderReadiness({ health: () => ({ ok: false, message: "ffmpeg is not installed" }) });
      expect(missing.ok).toBe(false);
      expect(missing.message).toMatch(/^ffmpeg is not installed; Shaka Packager is missing \(\/nonexistent\/packager\)/);
    } finally {
      if (saved === undefined) delete process.env.MEDIA_PACKAGER;
      else process.env.MEDIA_PACKAGER = saved;
    }
  });
});
