// The HLS plans whose lowest rung goes first, whole: a hosted video's growing stream, a ladder split
// into chunks, one chunk. Each plan's commands are pinned argument by argument (a stream map,
// a -map or a flag lost is a stream ffmpeg does not write, or writes where nothing reads it).
import { describe, expect, it } from "vitest";
import { OutputType } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { plan, probe, spec, type SpecInit } from "../plan.fixtures.js";
import { commandsOf, shapeOf } from "./plan-view.fixtures.js";

const ladder = (init: SpecInit = {}) =>
  spec({
    type: OutputType.HLS,
    hls: { segmentDurationSeconds: 4 },
    video: [
      { codec: VideoCodec.H264, resolution: "720p" },
      { codec: VideoCodec.H264, resolution: "480p" },
    ],
    audio: [
      { codec: AudioCodec.AAC, language: "en" },
      { codec: AudioCodec.AAC, language: "de" },
    ],
    ...init,
  });
const long = probe({ durationMs: 130_000 });

describe("the lowest rung first: a hosted video's growing stream", () => {
  it("a short first segment: the lowest rung alone, the audio in a command of its own, the other rungs niced", () => {
    const p = plan(ladder(), long, { progressive: true });
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 130000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "480p/index.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "audio_0/index.m3u8 group=audio "English" lang=en default=true channels=2",
          "audio_1/index.m3u8 group=audio "German" lang=de default=false channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "nice": [
          0,
          0,
          10,
        ],
        "parallel": true,
        "progressive": {
          "first": [
            "480p/index.m3u8",
            "audio_0/index.m3u8",
            "audio_1/index.m3u8",
          ],
          "rest": [
            "720p/index.m3u8",
          ],
        },
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "480p h264 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
        "weights": [
          12297600,
          691200,
          27648000,
        ],
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 120 -keyint_min:v:0 120 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:if(lt(n_forced,2),gte(t,n_forced*1),gte(t,(n_forced-1)*4)) -f hls -hls_time 4 -hls_init_time 1 -hls_playlist_type event -output_ts_offset 1.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:480p,agroup:audio /work/out_1/%v/index.m3u8",
        "<global> -i /in/input -map 0:a:0 -map 0:a:0 -vn -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=en -c:a:1 aac -b:a:1 128k -ar:a:1 44100 -metadata:s:a:1 language=de -f hls -hls_time 4 -hls_playlist_type event -output_ts_offset 1.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map a:0,name:audio_0,agroup:audio a:1,name:audio_1,agroup:audio /work/out_1/%v/index.m3u8",
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 120 -keyint_min:v:0 120 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:if(lt(n_forced,2),gte(t,n_forced*1),gte(t,(n_forced-1)*4)) -f hls -hls_time 4 -hls_init_time 1 -hls_playlist_type event -output_ts_offset 1.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p,agroup:audio /work/out_1/%v/index.m3u8",
      ]
    `);
  });

  it("no short first segment (HEVC): the lowest rung carries the audio; without audio no audio group", () => {
    const hevc = ladder({
      video: [
        { codec: VideoCodec.H265, resolution: "720p" },
        { codec: VideoCodec.H265, resolution: "480p" },
      ],
    });
    const p = plan(hevc, long, { progressive: true });
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "durationMs": 130000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "480p/index.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "audio_0/index.m3u8 group=audio "English" lang=en default=true channels=2",
          "audio_1/index.m3u8 group=audio "German" lang=de default=false channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "nice": [
          0,
          10,
        ],
        "parallel": true,
        "progressive": {
          "first": [
            "480p/index.m3u8",
            "audio_0/index.m3u8",
            "audio_1/index.m3u8",
          ],
          "rest": [
            "720p/index.m3u8",
          ],
        },
        "renditions": [
          "720p h265 1280x720@30 720p/index.m3u8",
          "480p h265 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
        "weights": [
          37584000,
          82944000,
        ],
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -map 0:a:0 -map 0:a:0 -c:v:0 libx265 -preset:v:0 fast -crf:v:0 26 -x265-params:v:0 keyint=60:log-level=error:min-keyint=60:scenecut=0:open-gop=0 -tag:v:0 hvc1 -force_key_frames:v:0 expr:gte(t,n_forced*4) -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=en -c:a:1 aac -b:a:1 128k -ar:a:1 44100 -metadata:s:a:1 language=de -f hls -hls_time 4 -hls_playlist_type event -hls_list_size 0 -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.m4s -max_muxing_queue_size 4096 -var_stream_map v:0,name:480p,agroup:audio a:0,name:audio_0,agroup:audio a:1,name:audio_1,agroup:audio /work/out_1/%v/index.m3u8",
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx265 -preset:v:0 fast -crf:v:0 26 -x265-params:v:0 keyint=60:log-level=error:min-keyint=60:scenecut=0:open-gop=0 -tag:v:0 hvc1 -force_key_frames:v:0 expr:gte(t,n_forced*4) -f hls -hls_time 4 -hls_playlist_type event -hls_list_size 0 -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.m4s -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p,agroup:audio /work/out_1/%v/index.m3u8",
      ]
    `);
    const silent = plan(spec({ ...hevc, disableAudio: true, audio: [] }), long, { progressive: true });
    expect(shapeOf(silent)).toMatchInlineSnapshot(`
      {
        "durationMs": 130000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=undefined range=undefined iframes=undefined",
          "480p/index.m3u8 854x480@30 group=undefined range=undefined iframes=undefined",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "nice": [
          0,
          10,
        ],
        "parallel": true,
        "progressive": {
          "first": [
            "480p/index.m3u8",
          ],
          "rest": [
            "720p/index.m3u8",
          ],
        },
        "renditions": [
          "720p h265 1280x720@30 720p/index.m3u8",
          "480p h265 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
        "weights": [
          36892800,
          82944000,
        ],
      }
    `);
    expect(commandsOf(silent)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx265 -preset:v:0 fast -crf:v:0 26 -x265-params:v:0 keyint=60:log-level=error:min-keyint=60:scenecut=0:open-gop=0 -tag:v:0 hvc1 -force_key_frames:v:0 expr:gte(t,n_forced*4) -f hls -hls_time 4 -hls_playlist_type event -hls_list_size 0 -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.m4s -max_muxing_queue_size 4096 -var_stream_map v:0,name:480p /work/out_1/%v/index.m3u8",
        "<global> -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx265 -preset:v:0 fast -crf:v:0 26 -x265-params:v:0 keyint=60:log-level=error:min-keyint=60:scenecut=0:open-gop=0 -tag:v:0 hvc1 -force_key_frames:v:0 expr:gte(t,n_forced*4) -f hls -hls_time 4 -hls_playlist_type event -hls_list_size 0 -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_flags independent_segments+temp_file -hls_segment_filename /work/out_1/%v/seg_%05d.m4s -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p /work/out_1/%v/index.m3u8",
      ]
    `);
  });
});

describe("the lowest rung first: a split ladder and its chunks", () => {
  it("chunked whole: the encode's own command is every audio track, the rungs are chunks", () => {
    const p = plan(ladder(), long, { chunked: true });
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "chunked": {
          "rest": [
            "720p 720p/index.m3u8",
            "480p 480p/index.m3u8",
          ],
          "segmentSeconds": 4,
        },
        "durationMs": 130000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "480p/index.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "audio_0/index.m3u8 group=audio "English" lang=en default=true channels=2",
          "audio_1/index.m3u8 group=audio "German" lang=de default=false channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "480p h264 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -map 0:a:0 -map 0:a:0 -vn -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=en -c:a:1 aac -b:a:1 128k -ar:a:1 44100 -metadata:s:a:1 language=de -f hls -hls_time 4 -hls_playlist_type vod -output_ts_offset 1.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map a:0,name:audio_0,agroup:audio a:1,name:audio_1,agroup:audio /work/out_1/%v/index.m3u8",
      ]
    `);
  });

  it("a hosted stream's split ladder: the lowest rung whole with the audio, growing when progressive", () => {
    const p = plan(ladder(), long, { chunked: true, wholeLowestRung: true });
    expect(shapeOf(p)).toMatchInlineSnapshot(`
      {
        "chunked": {
          "rest": [
            "720p 720p/index.m3u8",
          ],
          "segmentSeconds": 4,
        },
        "durationMs": 130000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "480p/index.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "audio_0/index.m3u8 group=audio "English" lang=en default=true channels=2",
          "audio_1/index.m3u8 group=audio "German" lang=de default=false channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "480p h264 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(p)).toMatchInlineSnapshot(`
      [
        "<global> -i /in/input -filter_complex [0:v:0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -map 0:a:0 -map 0:a:0 -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*4) -c:a:0 aac -b:a:0 128k -ar:a:0 44100 -metadata:s:a:0 language=en -c:a:1 aac -b:a:1 128k -ar:a:1 44100 -metadata:s:a:1 language=de -f hls -hls_time 4 -hls_playlist_type vod -output_ts_offset 1.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:480p,agroup:audio a:0,name:audio_0,agroup:audio a:1,name:audio_1,agroup:audio /work/out_1/%v/index.m3u8",
      ]
    `);
    expect(shapeOf(plan(ladder(), long, { chunked: true, progressive: true }))).toMatchInlineSnapshot(`
      {
        "chunked": {
          "rest": [
            "720p 720p/index.m3u8",
          ],
          "segmentSeconds": 4,
        },
        "durationMs": 130000,
        "hlsMaster": [
          "index.m3u8",
          "720p/index.m3u8 1280x720@30 group=audio range=undefined iframes=undefined",
          "480p/index.m3u8 854x480@30 group=audio range=undefined iframes=undefined",
          "audio_0/index.m3u8 group=audio "English" lang=en default=true channels=2",
          "audio_1/index.m3u8 group=audio "German" lang=de default=false channels=2",
        ],
        "kind": "hls",
        "main": "index.m3u8",
        "parallel": false,
        "progressive": {
          "first": [
            "480p/index.m3u8",
            "audio_0/index.m3u8",
            "audio_1/index.m3u8",
          ],
          "rest": [],
        },
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "480p h264 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
      }
    `);
  });

  it("a chunk: its rungs over its span from one decode, exactly its frames; the last one open", () => {
    const middle = plan(ladder(), long, { chunk: { start: 16, end: 32 } });
    expect(shapeOf(middle)).toMatchInlineSnapshot(`
      {
        "durationMs": 16000,
        "kind": "chunk",
        "main": "720p/index.m3u8",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
          "480p h264 854x480@30 480p/index.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(middle)).toMatchInlineSnapshot(`
      [
        "<global> -ss 16.000000 -to 32.016667 -i /in/input -filter_complex [0:v:0]split=2[s0][s1];[s0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v1] -map [v0] -map [v1] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*4) -c:v:1 libx264 -preset:v:1 fast -crf:v:1 23 -g:v:1 60 -keyint_min:v:1 60 -sc_threshold:v:1 0 -force_key_frames:v:1 expr:gte(t,n_forced*4) -frames:v:0 480 -frames:v:1 480 -f hls -hls_time 4 -hls_playlist_type vod -start_number 4 -output_ts_offset 17.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p v:1,name:480p /work/out_1/%v/index.m3u8",
      ]
    `);
    const last = plan(ladder(), long, { chunk: { start: 112 }, wholeLowestRung: true });
    expect(shapeOf(last)).toMatchInlineSnapshot(`
      {
        "durationMs": 18000,
        "kind": "chunk",
        "main": "720p/index.m3u8",
        "parallel": false,
        "renditions": [
          "720p h264 1280x720@30 720p/index.m3u8",
        ],
        "strategy": "split",
      }
    `);
    expect(commandsOf(last)).toMatchInlineSnapshot(`
      [
        "<global> -ss 112.000000 -i /in/input -filter_complex [0:v:0]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v0] -map [v0] -c:v:0 libx264 -preset:v:0 fast -crf:v:0 23 -g:v:0 60 -keyint_min:v:0 60 -sc_threshold:v:0 0 -force_key_frames:v:0 expr:gte(t,n_forced*4) -f hls -hls_time 4 -hls_playlist_type vod -start_number 28 -output_ts_offset 113.000000 -hls_list_size 0 -hls_segment_type mpegts -hls_flags independent_segments -hls_segment_filename /work/out_1/%v/seg_%05d.ts -max_muxing_queue_size 4096 -var_stream_map v:0,name:720p /work/out_1/%v/index.m3u8",
      ]
    `);
  });
});
