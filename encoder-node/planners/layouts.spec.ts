// The plans of progressive files and of whole HLS outputs, pinned argument by argument: a stream
// map, a -map or a muxer flag lost is a stream ffmpeg does not write, or writes where nothing reads it.
import { describe, expect, it } from "vitest";
import { EncryptionScheme, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, HlsPlaylistType, SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { after, plan, probe, spec, type SpecInit } from "../plan.fixtures.js";
import { commandsOf, shapeOf } from "./plan-view.fixtures.js";

const ladder = [
  { codec: VideoCodec.H264, resolution: "720p" },
  { codec: VideoCodec.H264, resolution: "1080p" },
];

describe("progressive files", () => {
  it("MP4: one decode split to every rung, each file with the audio, moov first; the largest is main", () => {
    const p = plan(spec({ type: OutputType.MP4, video: ladder }));
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 10000,
        "kind": "file",
        "main": "1080p.mp4",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 720p.mp4",
          "1080p h264 1920x1080@30 1080p.mp4",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]split=2[s0][s1];[s0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]format=yuv420p[v1] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -movflags +faststart -max_muxing_queue_size 4096 -f mp4 /work/out_1/720p.mp4 -map [v1] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -movflags +faststart -max_muxing_queue_size 4096 -f mp4 /work/out_1/1080p.mp4",
      ]
    `);
  });

  it("WebM per rendition: a process each, weighted by its work, Opus audio in each, no faststart", () => {
    const p = plan(
      spec({
        type: OutputType.WEBM,
        video: [
          { codec: VideoCodec.VP9, resolution: "480p" },
          { codec: VideoCodec.AV1, resolution: "720p" },
        ],
      }),
      probe(),
      {
        strategy: "per-rendition",
      },
    );
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 10000,
        "kind": "file",
        "main": "720p.webm",
        "parallel": true,
        "renditions": [
          "480p vp9 854x480@30 480p.webm",
          "720p av1 1280x720@30 720p.webm",
        ],
        "strategy": "per-rendition",
        "weights": [
          30744000,
          55296000,
        ],
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libvpx-vp9 -deadline:v:0 good -cpu-used:v:0 2 -row-mt:v:0 1 -crf:v:0 32 -b:v:0 0 -g:v:0 60 -map 0:a:0 -c:a:0 libopus -b:a:0 96k -ar:a:0 48000 -max_muxing_queue_size 4096 -f webm /work/out_1/480p.webm",
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libsvtav1 -preset:v:0 8 -crf:v:0 33 -g:v:0 60 -map 0:a:0 -c:a:0 libopus -b:a:0 96k -ar:a:0 48000 -max_muxing_queue_size 4096 -f webm /work/out_1/720p.webm",
      ]
    `);
  });

  it("audio alone: one file named audio, no video", () => {
    const p = plan(spec({ type: OutputType.MOV, audio: [{ codec: AudioCodec.AAC }] }));
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 10000,
        "kind": "file",
        "main": "audio.mov",
        "parallel": false,
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -map 0:a:0 -vn -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -movflags +faststart -max_muxing_queue_size 4096 -f mov /work/out_1/audio.mov",
      ]
    `);
  });
});

describe("HLS of the whole output", () => {
  it("aes_128, EVENT and a named master: one command, the key info file in the muxer", () => {
    const p = plan(
      spec({
        type: OutputType.HLS,
        hls: { manifestName: "master", playlistType: HlsPlaylistType.EVENT },
        drm: { scheme: EncryptionScheme.AES_128 },
        video: ladder,
      }),
    );
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "aes128": {
          "keyInfoFile": "/work/out_1.keys/aes128.keyinfo",
        },
        "durationMs": 10000,
        "hlsMaster": [
          "master.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "1080p/index.m3u8 1920x1080@30 group=audio range=undefined iframes=undefined",
          "audio_0/index.m3u8 group=audio "Audio" lang= default=true channels=2",
        ],
        "kind": "hls",
        "main": "master.m3u8",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "1080p h264 1920x1080@30 1080p/index.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]split=2[s0][s1];[s0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]format=yuv420p[v1] -map [v0] -map [v1] -map 0:a:0 -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -c:v:1 libx264 -preset:v:1 fast -crf:v:1 23 -g:v:1 60 -keyint_min:v:1 60 -sc_threshold:v:1 0 -force_key_frames:v:1 expr:gte(t,n_forced*6) -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -f hls -hls_time 6 -hls_playlist_type event -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -hls_key_info_file /work/out_1.keys/aes128.keyinfo -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p,agroup:audio v:1,name:1080p,agroup:audio a:0,name:audio_0,agroup:audio /work/out_1/%v/index.m3u8",
      ]
    `);
  });

  it("per rendition with two audio tracks and I-frame playlists: a process per rung without audio groups in its map, one for the audio", () => {
    const p = plan(
      spec({
        type: OutputType.HLS,
        hls: { iframePlaylists: true },
        video: ladder,
        audio: [{ codec: AudioCodec.AAC, name: "Main" }, { codec: AudioCodec.AAC }],
      }),
      probe({ audioStreams: 2 }),
      { strategy: "per-rendition" },
    );
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 10000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=720p/index_iframes.m3u8",
          "1080p/index.m3u8 1920x1080@30 group=audio range=undefined iframes=1080p/index_iframes.m3u8",
          "audio_0/index.m3u8 group=audio "Main" lang= default=true channels=2",
          "audio_1/index.m3u8 group=audio "Audio 2" lang= default=false channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "parallel": true,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "1080p h264 1920x1080@30 1080p/index.m3u8",
        ],
        "strategy": "per-rendition",
        "weights": [
          27648000,
          62208000,
          691200,
        ],
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -f hls -hls_time 6 -hls_playlist_type vod -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p /work/out_1/%v/index.m3u8",
        "<global> -i /in/input -filter_complex [0:v:0]format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -f hls -hls_time 6 -hls_playlist_type vod -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:1080p /work/out_1/%v/index.m3u8",
        "<global> -i /in/input -map 0:a:0 -map 0:a:1 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 title=Main -c:a:1 aac -b:a:1 128k -ar:a:1 44100 -f hls -hls_time 6 -hls_playlist_type vod -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map a:0,name:audio_0 a:1,name:audio_1 /work/out_1/%v/index.m3u8",
      ]
    `);
  });

  it("a single file per stream on fmp4, and audio alone", () => {
    const single = plan(spec({ type: OutputType.HLS, segments: { singleFile: true, segmentFormat: SegmentFormat.FMP4 }, video: ladder.slice(0, 1) }));
    expect(commandsOf(single)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -map 0:a:0 -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -f hls -hls_time 6 -hls_playlist_type vod -hls_list_size 0 -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_flags independent_segments+single_file -hls_segment_filename /work/out_1/%v/media.m4s -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p,agroup:audio a:0,name:audio_0,agroup:audio /work/out_1/%v/index.m3u8",
      ]
    `);
    const sound = plan(spec({ type: OutputType.HLS, audio: [{ codec: AudioCodec.AAC }] }));
    expect(shapeOf(sound)).toMatchInlineSnapshot(`
      {
        "durationMs": 10000,
        "hlsMaster": [
          "index.m3u8",
          "audio_0/index.m3u8 group=audio "Audio" lang= default=true channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "parallel": false,
        "renditions": [],
        "strategy": "split",
      }
    `);
    expect(commandsOf(sound)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -f hls -hls_time 6 -hls_playlist_type vod -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map a:0,name:audio_0 /work/out_1/%v/index.m3u8",
      ]
    `);
  });
});

describe("one command or one per rendition", () => {
  const oneRung = [{ codec: VideoCodec.H264, resolution: "720p" }];
  const perRendition = (init: SpecInit) => plan(spec(init), probe(), { strategy: "per-rendition" });
  const layout = (p: ReturnType<typeof plan>) => [p.commands.length, p.parallel, p.weights?.length];

  it("per rendition, nothing to run apart is still one command: one rung alone, or audio alone", () => {
    expect(layout(perRendition({ type: OutputType.MP4, video: oneRung }))).toEqual([1, false, undefined]);
    expect(layout(perRendition({ type: OutputType.HLS, video: oneRung, disableAudio: true }))).toEqual([1, false, undefined]);
    expect(layout(perRendition({ type: OutputType.HLS, audio: [{ codec: AudioCodec.AAC }, { codec: AudioCodec.AAC }] }))).toEqual([1, false, undefined]);
  });

  it("a silent ladder in one command: its stream map names no audio group", () => {
    const silent = plan(spec({ type: OutputType.HLS, video: ladder, disableAudio: true }));
    expect(after(silent.commands[0]!, "-var_stream_map")).toBe("v:0,name:720p v:1,name:1080p");
  });

  it("per rendition: one rung and its audio are two commands; silent rungs have no audio command", () => {
    expect(layout(perRendition({ type: OutputType.HLS, video: oneRung }))).toEqual([2, true, 2]);
    const silent = perRendition({ type: OutputType.HLS, video: ladder, disableAudio: true });
    expect(layout(silent)).toEqual([2, true, 2]);
    expect(silent.commands.some((c) => c.includes("0:a:0"))).toBe(false);
  });

  it("content-aware rates reach the rungs they were chosen for", () => {
    const p = plan(spec({ type: OutputType.HLS, video: ladder }), probe(), { contentAware: [{ crf: 27, maxKbps: 3000 }, { crf: 21 }] });
    const cmd = p.commands[0]!;
    expect([after(cmd, "-crf:v:0"), after(cmd, "-maxrate:v:0"), after(cmd, "-crf:v:1"), after(cmd, "-maxrate:v:1")]).toEqual(["27", "3000k", "21", undefined]);
  });

  it("a chunk of an EVENT output is written VOD: the encode that split it writes the playlists", () => {
    const event = spec({ type: OutputType.HLS, hls: { segmentDurationSeconds: 4, playlistType: HlsPlaylistType.EVENT }, video: ladder });
    expect(after(plan(event, probe({ durationMs: 130_000 }), { chunk: { start: 16, end: 32 } }).commands[0]!, "-hls_playlist_type")).toBe("vod");
  });
});
