// planOutput without running ffmpeg: protected outputs, clear intermediates for the packager or ffmpeg's own aes_128.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DrmSystem, EncryptionScheme, OutputType } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, HlsPlaylistType, SegmentFormat, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { drmSchemeOf, drmSystemsOf, planOutput } from "./plan.js";
import { after, plan, probe, spec } from "./plan.fixtures.js";

describe("planOutput: protected outputs", () => {
  const ladder = [
    { codec: VideoCodec.H264, resolution: "720p" },
    { codec: VideoCodec.H264, resolution: "480p" },
  ];
  const outputs = (cmd: readonly string[]) => cmd.filter((a) => a.endsWith(".mp4"));

  it("drmSchemeOf: the scheme asked, else aes128 on ts HLS and cbcs on CMAF; undefined when clear", () => {
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder }))).toBeUndefined();
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder, drm: {} }))).toBe("aes128");
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder, hls: { segmentFormat: SegmentFormat.FMP4 }, drm: {} }))).toBe("cbcs");
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H265 }], drm: {} }))).toBe("cbcs");
    expect(drmSchemeOf(spec({ type: OutputType.DASH, video: ladder, drm: {} }))).toBe("cbcs");
    expect(drmSchemeOf(spec({ type: OutputType.ADAPTIVE, video: ladder, drm: { scheme: EncryptionScheme.CENC } }))).toBe("cenc");
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder, drm: { scheme: EncryptionScheme.AES_128 } }))).toBe("aes128");
  });

  it("drmSystemsOf: the systems by name, in the order asked, each once", () => {
    expect(drmSystemsOf(spec({ type: OutputType.DASH }))).toEqual([]);
    const systems = [DrmSystem.PLAYREADY, DrmSystem.CLEARKEY, DrmSystem.UNSPECIFIED, DrmSystem.WIDEVINE, DrmSystem.FAIRPLAY, DrmSystem.CLEARKEY];
    expect(drmSystemsOf(spec({ type: OutputType.DASH, drm: { systems } }))).toEqual(["playready", "clearkey", "widevine", "fairplay"]);
  });

  it("adaptive cbcs: clear MP4s per rendition and audio track for the packager, the clear layout's names, classes by size", () => {
    const p = plan(
      spec({
        type: OutputType.ADAPTIVE,
        segments: { segmentDurationSeconds: 4 },
        video: ladder,
        audio: [{ codec: AudioCodec.AAC, language: "pt-BR" }],
        drm: { systems: [DrmSystem.CLEARKEY, DrmSystem.WIDEVINE] },
      }),
    );
    const cmd = p.commands[0]!;
    expect([p.commands.length, p.strategy, p.parallel]).toEqual([1, "split", false]);
    expect(cmd).not.toContain("dash");
    expect(cmd).not.toContain("-hls_playlist");
    expect(outputs(cmd)).toEqual(["/work/out_1/_clear/720p.mp4", "/work/out_1/_clear/480p.mp4", "/work/out_1/_clear/audio_0.mp4"]);
    // Each file holds one stream: the video files no audio, the audio file no video.
    const first = cmd.slice(cmd.indexOf("[v0]") - 1, cmd.indexOf("/work/out_1/_clear/720p.mp4") + 1);
    expect(first.filter((a) => a === "-map")).toHaveLength(1);
    expect(cmd.slice(cmd.indexOf("/work/out_1/_clear/480p.mp4") + 1)).toEqual([
      "-map",
      "0:a:0",
      "-c:a:0",
      "aac",
      "-b:a:0",
      "128k",
      "-ar:a:0",
      "44100",
      "-metadata:s:a:0",
      "language=pt-BR",
      "-max_muxing_queue_size",
      "4096",
      "-f",
      "mp4",
      "/work/out_1/_clear/audio_0.mp4",
    ]);
    // Keyframes on the segment grid in every rendition: the packager cuts segments at them.
    expect([after(first, "-force_key_frames:v:0"), after(first, "-sc_threshold:v:0"), after(first, "-g:v:0")]).toEqual(["expr:gte(t,n_forced*4)", "0", "60"]);
    expect(p.packaging).toEqual({
      scheme: "cbcs",
      systems: ["clearkey", "widevine"],
      segmentSeconds: 4,
      singleFile: false,
      dir: "/work/out_1",
      clearDir: "/work/out_1/_clear",
      secretsDir: "/work/out_1.keys",
      streams: [
        {
          input: "/work/out_1/_clear/720p.mp4",
          kind: "video",
          trackClass: "hd",
          name: "720p",
          language: "",
          init: "init-0.m4s",
          segmentTemplate: "chunk-0-$Number%05d$.m4s",
          playlist: "media_0.m3u8",
        },
        {
          input: "/work/out_1/_clear/480p.mp4",
          kind: "video",
          trackClass: "sd",
          name: "480p",
          language: "",
          init: "init-1.m4s",
          segmentTemplate: "chunk-1-$Number%05d$.m4s",
          playlist: "media_1.m3u8",
        },
        {
          input: "/work/out_1/_clear/audio_0.mp4",
          kind: "audio",
          trackClass: "audio",
          name: "audio_0",
          language: "pt-BR",
          init: "init-2.m4s",
          segmentTemplate: "chunk-2-$Number%05d$.m4s",
          playlist: "media_2.m3u8",
        },
      ],
      mpd: "manifest.mpd",
      hls: { master: "index.m3u8", playlistType: "VOD" },
    });
    expect([p.main, p.renditions?.map((r) => r.file)]).toEqual(["index.m3u8", ["media_0.m3u8", "media_1.m3u8"]]);
    expect([p.hlsMaster?.variants.map((v) => v.playlist), p.hlsMaster?.audio.map((a) => a.playlist)]).toEqual([
      ["media_0.m3u8", "media_1.m3u8"],
      ["media_2.m3u8"],
    ]);
    expect(p.dashManifest).toEqual({ file: "manifest.mpd", minBufferTimeSeconds: 2 });
    expect(p.aes128).toBeUndefined();
  });

  it("dash cenc: the MPD only; a portrait 720x1280 rung is HD and a 480x854 one SD, by their short side", () => {
    const p = plan(
      spec({
        type: OutputType.DASH,
        dash: { manifestName: "stream" },
        video: ladder,
        disableAudio: true,
        drm: { scheme: EncryptionScheme.CENC, systems: [DrmSystem.PLAYREADY] },
      }),
      probe({}, { width: 1080, height: 1920 }),
    );
    expect([p.main, p.renditions?.map((r) => r.file), p.hlsMaster, p.dashManifest?.file]).toEqual([
      "stream.mpd",
      ["stream.mpd", "stream.mpd"],
      undefined,
      "stream.mpd",
    ]);
    expect(p.packaging?.streams.map((s) => [s.name, s.trackClass, s.init, s.playlist])).toEqual([
      ["720p", "hd", "init-0.m4s", undefined],
      ["480p", "sd", "init-1.m4s", undefined],
    ]);
    expect([p.packaging?.scheme, p.packaging?.mpd, p.packaging?.hls]).toEqual(["cenc", "stream.mpd", undefined]);
  });

  it("hls fmp4 cbcs per rendition: one process per rendition and one for the audio, rendition folders, EVENT kept", () => {
    const p = plan(
      spec({
        type: OutputType.HLS,
        hls: { segmentFormat: SegmentFormat.FMP4, playlistType: HlsPlaylistType.EVENT, manifestName: "master" },
        video: ladder,
        audio: [{ codec: AudioCodec.AAC }, { codec: AudioCodec.AAC, bitrateKbps: 64 }],
        drm: { systems: [DrmSystem.CLEARKEY] },
      }),
      probe(),
      { strategy: "per-rendition" },
    );
    expect([p.strategy, p.parallel, p.commands.map(outputs)]).toEqual([
      "per-rendition",
      true,
      [["/work/out_1/_clear/720p.mp4"], ["/work/out_1/_clear/480p.mp4"], ["/work/out_1/_clear/audio_0.mp4", "/work/out_1/_clear/audio_1.mp4"]],
    ]);
    expect(p.commands[2]).not.toContain("-filter_complex");
    expect(p.weights?.length).toBe(3);
    expect(p.packaging?.streams.map((s) => [s.init, s.segmentTemplate, s.playlist])).toEqual([
      ["720p/init.mp4", "720p/seg_$Number%05d$.m4s", "720p/index.m3u8"],
      ["480p/init.mp4", "480p/seg_$Number%05d$.m4s", "480p/index.m3u8"],
      ["audio_0/init.mp4", "audio_0/seg_$Number%05d$.m4s", "audio_0/index.m3u8"],
      ["audio_1/init.mp4", "audio_1/seg_$Number%05d$.m4s", "audio_1/index.m3u8"],
    ]);
    expect([p.packaging?.hls, p.packaging?.mpd, p.dashManifest, p.main]).toEqual([
      { master: "master.m3u8", playlistType: "EVENT" },
      undefined,
      undefined,
      "master.m3u8",
    ]);
    expect(p.hlsMaster?.variants.map((v) => v.playlist)).toEqual(["720p/index.m3u8", "480p/index.m3u8"]);
  });

  it("single file: one file per stream, no segment template", () => {
    const hls = plan(
      spec({
        type: OutputType.HLS,
        segments: { singleFile: true, segmentFormat: SegmentFormat.FMP4 },
        video: [{ codec: VideoCodec.H264 }],
        drm: { systems: [DrmSystem.CLEARKEY] },
      }),
    );
    expect(hls.packaging?.streams.map((s) => [s.init, s.segmentTemplate])).toEqual([
      ["1920x1080/media.m4s", undefined],
      ["audio_0/media.m4s", undefined],
    ]);
    const dash = plan(
      spec({ type: OutputType.DASH, segments: { singleFile: true }, video: [{ codec: VideoCodec.H264 }], drm: { systems: [DrmSystem.CLEARKEY] } }),
    );
    expect([dash.packaging?.singleFile, dash.packaging?.streams.map((s) => s.init)]).toEqual([true, ["stream-0.m4s", "stream-1.m4s"]]);
  });

  it("hls ts aes_128: ffmpeg's muxer encrypts with a key info file outside the output folder, in every command", () => {
    const s = spec({ type: OutputType.HLS, video: ladder, drm: {} });
    const split = plan(s);
    expect(split.aes128).toEqual({ keyInfoFile: "/work/out_1.keys/aes128.keyinfo" });
    expect([split.packaging, after(split.commands[0]!, "-hls_key_info_file"), after(split.commands[0]!, "-hls_segment_type")]).toEqual([
      undefined,
      "/work/out_1.keys/aes128.keyinfo",
      "mpegts",
    ]);
    const per = plan(s, probe(), { strategy: "per-rendition" });
    expect(per.commands.map((c) => after(c, "-hls_key_info_file"))).toEqual(Array(3).fill("/work/out_1.keys/aes128.keyinfo"));
    // The key info file names the key file: neither may be among the files uploaded from dir.
    expect(path.relative(per.dir, per.aes128!.keyInfoFile).startsWith("..")).toBe(true);
  });

  it("a clear output has neither packaging nor aes_128", () => {
    for (const type of [OutputType.HLS, OutputType.DASH, OutputType.ADAPTIVE]) {
      const p = plan(spec({ type, video: ladder }));
      expect([p.packaging, p.aes128, p.commands.flat().includes("-hls_key_info_file")]).toEqual([undefined, undefined, false]);
    }
  });
});
