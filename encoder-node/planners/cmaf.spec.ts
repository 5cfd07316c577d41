// The plans of DASH and adaptive outputs by ffmpeg's dash muxer, and of cbcs and cenc outputs whose
// clear intermediates the packager encrypts, pinned argument by argument.
import { describe, expect, it } from "vitest";
import { DrmSystem, EncryptionScheme, HdrMode, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, HlsPlaylistType, SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { after, plan, probe, spec, type SpecInit } from "../plan.fixtures.js";
import { AUDIO_TRACK_WEIGHT } from "../renditions.js";
import { commandsOf, shapeOf } from "./plan-view.fixtures.js";

const ladder = [
  { codec: VideoCodec.H264, resolution: "720p" },
  { codec: VideoCodec.H264, resolution: "480p" },
];
const languages = [
  { codec: AudioCodec.AAC, language: "en" },
  { codec: AudioCodec.AAC, language: "fr" },
];

describe("DASH and adaptive by the dash muxer", () => {
  it("DASH of single files, no timeline, default names; PQ video keeps its colour in the MPD", () => {
    const pq = probe({}, { codec: "hevc", pixelFormat: "yuv420p10le", color: { primaries: "bt2020", transfer: "smpte2084", matrix: "bt2020nc" } });
    const p = plan(
      spec({
        type: OutputType.DASH,
        segments: { singleFile: true },
        video: [{ codec: VideoCodec.H265, resolution: "720p", hdr: { mode: HdrMode.PASSTHROUGH } }],
      }),
      pq,
    );
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "dashManifest": {
          "colour": {
            "matrix": 9,
            "primaries": 9,
            "transfer": 16,
          },
          "file": "manifest.mpd",
          "minBufferTimeSeconds": 2,
        },
        "durationMs": 10000,
        "kind": "dash",
        "main": "manifest.mpd",
        "parallel": false,
        "renditions": [
          "720p h265 1280x720@30 manifest.mpd",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p10le[v0] -map [v0] -map 0:a:0 -c:v:0 libx265 -preset:v:0 fast -crf:v:0 26 -x265-params:v:0 keyint=60:log-level=error:min-keyint=60:scenecut=0:open-gop=0:hdr10=1:repeat-headers=1 -tag:v:0 hvc1 -color_primaries:v:0 bt2020 -color_trc:v:0 smpte2084 -colorspace:v:0 bt2020nc -color_range:v:0 tv -force_key_frames:v:0 expr:gte(t,n_forced*6) -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -f dash -seg_duration 6 -use_template 1 -use_timeline 0 -dash_segment_type mp4 -adaptation_sets id=0,streams=v id=1,streams=1 -single_file 1 -single_file_name stream-$RepresentationID$.m4s -max_muxing_queue_size 4096 /work/out_1/manifest.mpd",
      ]
    `);
  });

  it("adaptive: HLS playlists over the dash muxer's segments, an adaptation set per audio language", () => {
    const p = plan(spec({ type: OutputType.ADAPTIVE, video: ladder, audio: languages }), probe({ audioStreams: 2 }));
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "dashManifest": {
          "file": "manifest.mpd",
          "minBufferTimeSeconds": 2,
        },
        "durationMs": 10000,
        "hlsMaster": [
          "index.m3u8",
          "media_0.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "media_1.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "media_2.m3u8 group=audio "English" lang=en default=true channels=2",
          "media_3.m3u8 group=audio "French" lang=fr default=false channels=2",
        ],
        "kind": "dash",
        "main": "index.m3u8",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 media_0.m3u8",
          "480p h264 854x480@30 media_1.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]split=2[s0][s1];[s0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]scale=854:480:flags=bicubic,setdar=16/9,format=yuv420p[v1] -map [v0] -map [v1] -map 0:a:0 -map 0:a:1 -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -c:v:1 libx264 -preset:v:1 fast -crf:v:1 23 -g:v:1 60 -keyint_min:v:1 60 -sc_threshold:v:1 0 -force_key_frames:v:1 expr:gte(t,n_forced*6) -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=en -c:a:1 aac -b:a:1 128k -ar:a:1 44100 -metadata:s:a:1 language=fr -f dash -seg_duration 6 -use_template 1 -use_timeline 0 -dash_segment_type mp4 -adaptation_sets id=0,streams=v id=1,streams=2 id=2,streams=3 -init_seg_name init-$RepresentationID$.m4s -media_seg_name chunk-$RepresentationID$-$Number%05d$.m4s -hls_playlist 1 -hls_master_name index.m3u8 -max_muxing_queue_size 4096 /work/out_1/manifest.mpd",
      ]
    `);
  });
});

describe("adaptive I-frame playlists", () => {
  it("each beside its variant's media playlist, numbered as the dash muxer numbers the video", () => {
    const p = plan(spec({ type: OutputType.ADAPTIVE, hls: { iframePlaylists: true }, video: ladder }));
    expect(p.hlsMaster?.variants.map((v) => v.iframes?.playlist)).toEqual(["media_0_iframes.m3u8", "media_1_iframes.m3u8"]);
  });
});

describe("DASH adaptation sets", () => {
  it("audio alone: no video set, and tracks of one language and codec share a set", () => {
    const p = plan(
      spec({
        type: OutputType.DASH,
        audio: [
          { codec: AudioCodec.AAC, language: "en" },
          { codec: AudioCodec.OPUS, language: "en" },
          { codec: AudioCodec.AAC, language: "en", bitrateKbps: 64 },
        ],
      }),
      probe({ audioStreams: 3 }),
    );
    expect(after(p.commands[0]!, "-adaptation_sets")).toBe("id=0,streams=0,2 id=1,streams=1");
    expect(p.commands[0]).not.toContain("-filter_complex");
  });
});

describe("cbcs and cenc: clear intermediates for the packager", () => {
  it("HLS cbcs on fmp4 per rendition, single files, EVENT: a process per rung and one for the audio", () => {
    const p = plan(
      spec({
        type: OutputType.HLS,
        hls: { segmentFormat: SegmentFormat.FMP4, playlistType: HlsPlaylistType.EVENT, iframePlaylists: true },
        segments: { singleFile: true },
        drm: { scheme: EncryptionScheme.CBCS, systems: [DrmSystem.FAIRPLAY] },
        video: ladder,
      }),
      probe(),
      { strategy: "per-rendition" },
    );
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 10000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=720p/index_iframes.m3u8",
          "480p/index.m3u8 854x480@30 group=audio range=undefined iframes=480p/index_iframes.m3u8",
          "audio_0/index.m3u8 group=audio "Audio" lang= default=true channels=2",
        ],
        "kind": "packaged",
        "main": "index.m3u8",
        "packaging": {
          "clearDir": "/work/out_1/_clear",
          "dir": "/work/out_1",
          "hls": {
            "master": "index.m3u8",
            "playlistType": "EVENT",
          },
          "scheme": "cbcs",
          "secretsDir": "/work/out_1.keys",
          "segmentSeconds": 6,
          "singleFile": true,
          "streams": [
            {
              "init": "720p/media.m4s",
              "input": "/work/out_1/_clear/720p.mp4",
              "kind": "video",
              "language": "",
              "name": "720p",
              "playlist": "720p/index.m3u8",
              "trackClass": "hd",
            },
            {
              "init": "480p/media.m4s",
              "input": "/work/out_1/_clear/480p.mp4",
              "kind": "video",
              "language": "",
              "name": "480p",
              "playlist": "480p/index.m3u8",
              "trackClass": "sd",
            },
            {
              "init": "audio_0/media.m4s",
              "input": "/work/out_1/_clear/audio_0.mp4",
              "kind": "audio",
              "language": "",
              "name": "audio_0",
              "playlist": "audio_0/index.m3u8",
              "trackClass": "audio",
            },
          ],
          "systems": [
            "fairplay",
          ],
        },
        "parallel": true,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "480p h264 854x480@30 480p/index.m3u8",
        ],
        "strategy": "per-rendition",
        "weights": [
          27648000,
          12297600,
          345600,
        ],
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/720p.mp4",
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/480p.mp4",
        "<global> -i /in/input -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/audio_0.mp4",
      ]
    `);
  });

  it("DASH cenc, and adaptive cbcs with two languages: one command writing every clear file", () => {
    const dash = plan(spec({ type: OutputType.DASH, dash: { minBufferTimeSeconds: 3 }, drm: { scheme: EncryptionScheme.CENC }, video: ladder }));
    expect(shapeOf(dash)).toMatchInlineSnapshot(`
      {
        "dashManifest": {
          "file": "manifest.mpd",
          "minBufferTimeSeconds": 3,
        },
        "durationMs": 10000,
        "kind": "packaged",
        "main": "manifest.mpd",
        "packaging": {
          "clearDir": "/work/out_1/_clear",
          "dir": "/work/out_1",
          "mpd": "manifest.mpd",
          "scheme": "cenc",
          "secretsDir": "/work/out_1.keys",
          "segmentSeconds": 6,
          "singleFile": false,
          "streams": [
            {
              "init": "init-0.m4s",
              "input": "/work/out_1/_clear/720p.mp4",
              "kind": "video",
              "language": "",
              "name": "720p",
              "segmentTemplate": "chunk-0-$Number%05d$.m4s",
              "trackClass": "hd",
            },
            {
              "init": "init-1.m4s",
              "input": "/work/out_1/_clear/480p.mp4",
              "kind": "video",
              "language": "",
              "name": "480p",
              "segmentTemplate": "chunk-1-$Number%05d$.m4s",
              "trackClass": "sd",
            },
            {
              "init": "init-2.m4s",
              "input": "/work/out_1/_clear/audio_0.mp4",
              "kind": "audio",
              "language": "",
              "name": "audio_0",
              "segmentTemplate": "chunk-2-$Number%05d$.m4s",
              "trackClass": "audio",
            },
          ],
          "systems": [],
        },
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 manifest.mpd",
          "480p h264 854x480@30 manifest.mpd",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(dash)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]split=2[s0][s1];[s0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]scale=854:480:flags=bicubic,setdar=16/9,format=yuv420p[v1] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/720p.mp4 -map [v1] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/480p.mp4 -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/audio_0.mp4",
      ]
    `);
    const adaptive = plan(
      spec({ type: OutputType.ADAPTIVE, drm: { systems: [DrmSystem.WIDEVINE] }, video: ladder.slice(1), audio: languages }),
      probe({ audioStreams: 2 }),
    );
    expect(shapeOf(adaptive)).toMatchInlineSnapshot(`
      {
        "dashManifest": {
          "file": "manifest.mpd",
          "minBufferTimeSeconds": 2,
        },
        "durationMs": 10000,
        "hlsMaster": [
          "index.m3u8",
          "media_0.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "media_1.m3u8 group=audio "English" lang=en default=true channels=2",
          "media_2.m3u8 group=audio "French" lang=fr default=false channels=2",
        ],
        "kind": "packaged",
        "main": "index.m3u8",
        "packaging": {
          "clearDir": "/work/out_1/_clear",
          "dir": "/work/out_1",
          "hls": {
            "master": "index.m3u8",
            "playlistType": "VOD",
          },
          "mpd": "manifest.mpd",
          "scheme": "cbcs",
          "secretsDir": "/work/out_1.keys",
          "segmentSeconds": 6,
          "singleFile": false,
          "streams": [
            {
              "init": "init-0.m4s",
              "input": "/work/out_1/_clear/480p.mp4",
              "kind": "video",
              "language": "",
              "name": "480p",
              "playlist": "media_0.m3u8",
              "segmentTemplate": "chunk-0-$Number%05d$.m4s",
              "trackClass": "sd",
            },
            {
              "init": "init-1.m4s",
              "input": "/work/out_1/_clear/audio_0.mp4",
              "kind": "audio",
              "language": "en",
              "name": "audio_0",
              "playlist": "media_1.m3u8",
              "segmentTemplate": "chunk-1-$Number%05d$.m4s",
              "trackClass": "audio",
            },
            {
              "init": "init-2.m4s",
              "input": "/work/out_1/_clear/audio_1.mp4",
              "kind": "audio",
              "language": "fr",
              "name": "audio_1",
              "playlist": "media_2.m3u8",
              "segmentTemplate": "chunk-2-$Number%05d$.m4s",
              "trackClass": "audio",
            },
          ],
          "systems": [
            "widevine",
          ],
        },
        "parallel": false,
        "renditions": [
          "480p h264 854x480@30 media_0.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(adaptive)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setdar=16/9,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*6) -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/480p.mp4 -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=en -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/audio_0.mp4 -map 0:a:1 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=fr -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/audio_1.mp4",
      ]
    `);
  });

  it("per rendition: the audio's command weighs every track, and there is none without audio; audio alone is one plain command", () => {
    const cbcs = (init: SpecInit) =>
      plan(spec({ type: OutputType.HLS, hls: { segmentFormat: SegmentFormat.FMP4 }, drm: {}, video: ladder, ...init }), probe({ audioStreams: 2 }), {
        strategy: "per-rendition",
      });
    expect(cbcs({ audio: languages }).weights?.at(-1)).toBe(2 * AUDIO_TRACK_WEIGHT);
    const silent = cbcs({ disableAudio: true });
    expect([silent.commands.length, silent.weights?.length, silent.commands.some((c) => c.includes("0:a:0"))]).toEqual([2, 2, false]);
    const sound = plan(spec({ type: OutputType.DASH, drm: { scheme: EncryptionScheme.CENC }, audio: [{ codec: AudioCodec.AAC }] }));
    expect(commandsOf(sound)).toEqual([
      "<global> -i /in/input -map 0:a:0 -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -max_muxing_queue_size 4096 -f mp4 /work/out_1/_clear/audio_0.mp4",
    ]);
  });
});
