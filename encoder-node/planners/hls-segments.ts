// How an HLS output is cut into segments and playlists: the muxer arguments every one of its
// commands ends with, whole, growing, split into chunks or one chunk.
import path from "node:path";
import { OutputType } from "../../src/gen/media/v1/job_pb.js";
import { HlsPlaylistType, SegmentFormat } from "../../src/gen/media/v1/preset_pb.js";
import { MediaError } from "../media-errors.js";
import { chunkOffset } from "./chunking.js";
import type { Layout } from "./layout.js";
import { segmentFormatOf } from "./segments.js";
import type { ChunkSpan, PlanOptions } from "./types.js";

/** An HLS output's ladder with what its kind adds: the aes_128 key info file, and how the encode is spread. */
export interface HlsLayout extends Layout {
  readonly keyInfoFile: string | undefined;
  readonly opts: PlanOptions;
}

/** What every muxer of one HLS output shares. */
export interface HlsSegmenting {
  readonly dir: string;
  readonly fmp4: boolean;
  readonly single: boolean;
  /** A hosted stream: EVENT playlists that grow segment by segment while the commands run. */
  readonly growing: boolean;
  /** A split ladder (chunked), or one chunk of it. */
  readonly split: boolean;
  /** A growing stream whose video starts with a short segment. */
  readonly short: boolean;
  readonly event: boolean;
  readonly segmentSeconds: number | undefined;
  readonly firstSegmentSeconds: number | undefined;
  readonly keyInfoFile: string | undefined;
}

export function hlsSegmenting(l: HlsLayout): HlsSegmenting {
  const { ctx, opts } = l;
  const single = ctx.spec.segments?.singleFile === true;
  const growing = opts.progressive === true && !single && l.renditions.length > 0;
  const split = opts.chunked === true || opts.chunk !== undefined;
  if (split && (single || l.keyInfoFile !== undefined || l.renditions.length < 2 || ctx.segmentSeconds === undefined))
    throw new MediaError("internal", "only a clear HLS ladder of separate segments and more than one rung can be split into chunks");
  return {
    dir: l.base.dir,
    fmp4: segmentFormatOf(ctx.spec, OutputType.HLS) === SegmentFormat.FMP4,
    single,
    growing,
    split,
    // A growing stream may start with a short segment (see planOutput); its audio stays apart, in a
    // command of its own, with segments of the whole length (-hls_init_time would cut them all short).
    short: growing && ctx.firstSegmentSeconds !== undefined,
    event: ctx.spec.hls?.playlistType === HlsPlaylistType.EVENT,
    segmentSeconds: ctx.segmentSeconds,
    firstSegmentSeconds: ctx.firstSegmentSeconds,
    keyInfoFile: l.keyInfoFile,
  };
}

/** The HLS muxer of one command writing these streams (a -var_stream_map), over the whole output or one chunk. */
export function hlsMuxer(s: HlsSegmenting, streams: string, chunk?: ChunkSpan, video = true): string[] {
  const ext = s.fmp4 ? "m4s" : "ts";
  return [
    "-f",
    "hls",
    "-hls_time",
    String(s.segmentSeconds),
    ...(s.short && video ? ["-hls_init_time", String(s.firstSegmentSeconds)] : []),
    "-hls_playlist_type",
    !chunk && (s.growing || s.event) ? "event" : "vod",
    // A chunk's segments take their place in the whole: numbered from its first, timestamps from its start.
    ...(chunk ? ["-start_number", String(Math.round(chunk.start / s.segmentSeconds!))] : []),
    // Streams encoded apart (chunks; a short-first stream's audio) line up only if ffmpeg shifts none.
    ...(s.split || s.short ? ["-output_ts_offset", chunkOffset(chunk)] : []),
    "-hls_list_size",
    "0",
    "-hls_segment_type",
    s.fmp4 ? "fmp4" : "mpegts",
    ...(s.fmp4 ? ["-hls_fmp4_init_filename", "init.mp4"] : []),
    "-hls_flags",
    // A growing output's segments appear whole (temp_file): its publisher uploads what its playlists list.
    s.single ? "independent_segments+single_file" : s.growing ? "independent_segments+temp_file" : "independent_segments",
    "-hls_segment_filename",
    path.join(s.dir, s.single ? `%v/media.${ext}` : `%v/seg_%05d.${ext}`),
    ...(s.keyInfoFile ? ["-hls_key_info_file", s.keyInfoFile] : []),
    "-max_muxing_queue_size",
    "4096",
    "-var_stream_map",
    streams,
    path.join(s.dir, "%v/index.m3u8"),
  ];
}
