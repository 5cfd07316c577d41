// Input probing with ffprobe's JSON output: container, duration, size and the first video and audio
// stream, as the job's input_metadata; plus the codec details of one encoded file for manifests.
// Plain ffprobe is enough here: fluent-ffmpeg's ffprobe wrapper adds nothing but an unmaintained layer.
import { execFile } from "node:child_process";
import { MediaError } from "./media-errors.js";

import type { ProbeResult } from "../actors/job/messages.js";

export type { ProbeResult };

/** Mastering display and content light level side data, as ffprobe prints them (chromaticities and luminances as rationals). */
interface FfprobeSideData {
  side_data_type?: string;
  rotation?: number;
  red_x?: string;
  red_y?: string;
  green_x?: string;
  green_y?: string;
  blue_x?: string;
  blue_y?: string;
  white_point_x?: string;
  white_point_y?: string;
  min_luminance?: string;
  max_luminance?: string;
  max_content?: number;
  max_average?: number;
}
interface FfprobeStream {
  index?: number;
  codec_type?: string;
  codec_name?: string;
  profile?: string;
  level?: number;
  width?: number;
  height?: number;
  pix_fmt?: string;
  sample_aspect_ratio?: string;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  bit_rate?: string;
  sample_rate?: string;
  channels?: number;
  channel_layout?: string;
  disposition?: { attached_pic?: number };
  tags?: { rotate?: string };
  side_data_list?: FfprobeSideData[];
  color_primaries?: string;
  color_transfer?: string;
  color_space?: string;
}
interface FfprobeOutput {
  format?: { format_name?: string; duration?: string; size?: string; bit_rate?: string };
  streams?: FfprobeStream[];
}

/** A probe that has not answered in this time is stuck on a pathological file. */
const PROBE_TIMEOUT_MS = 60_000;

function ffprobe(args: string[], signal: AbortSignal | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new MediaError("canceled", "probe canceled"));
    execFile(
      "ffprobe",
      ["-v", "error", "-print_format", "json", ...args],
      { signal, timeout: PROBE_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        if (signal?.aborted) return reject(new MediaError("canceled", "probe canceled"));
        const e = err as NodeJS.ErrnoException & { killed?: boolean };
        if (e.code === "ENOENT") return reject(new MediaError("internal", "ffprobe is not installed on this encoder node"));
        if (e.killed) return reject(new MediaError("input_invalid", `ffprobe did not finish within ${PROBE_TIMEOUT_MS / 1000} s`));
        const reason = stderr.trim().split("\n").slice(-3).join("; ") || e.message;
        if (/No such file or directory|Permission denied/.test(reason)) return reject(new MediaError("input_unreachable", reason));
        reject(new MediaError("input_invalid", `not a readable media file: ${reason}`));
      },
    );
  });
}

/** "30000/1001" → 29.97; "0/0" → 0. */
function ratio(value: string | undefined): number {
  if (!value) return 0;
  const [n, d] = value.split(/[/:]/).map(Number);
  if (n === undefined || !Number.isFinite(n)) return 0;
  if (d === undefined) return n;
  return d > 0 ? n / d : 0;
}

const int = (value: string | number | undefined) => {
  const n = Math.round(Number(value ?? 0));
  return Number.isFinite(n) && n > 0 ? n : 0;
};

function rotationOf(s: FfprobeStream): number | undefined {
  const fromMatrix = s.side_data_list?.find((d) => typeof d.rotation === "number")?.rotation;
  const r = fromMatrix ?? (s.tags?.rotate !== undefined ? Number(s.tags.rotate) : undefined);
  return r !== undefined && Number.isFinite(r) && r % 360 !== 0 ? r : undefined;
}

type Video = NonNullable<ProbeResult["video"]>;
const known = (name: string | undefined) => (name && name !== "unknown" && name !== "reserved" ? name : "");

/** HDR static metadata from side data (a stream's or a frame's), when it has any. */
function hdrMetadataOf(list: FfprobeSideData[] | undefined): Pick<Video, "masteringDisplay" | "contentLight"> {
  const out: Pick<Video, "masteringDisplay" | "contentLight"> = {};
  const md = list?.find((d) => d.side_data_type === "Mastering display metadata" && d.max_luminance !== undefined && d.red_x !== undefined);
  if (md) {
    const xy = (x: string | undefined, y: string | undefined): [number, number] => [ratio(x), ratio(y)];
    out.masteringDisplay = {
      red: xy(md.red_x, md.red_y),
      green: xy(md.green_x, md.green_y),
      blue: xy(md.blue_x, md.blue_y),
      whitePoint: xy(md.white_point_x, md.white_point_y),
      maxLuminance: ratio(md.max_luminance),
      minLuminance: ratio(md.min_luminance),
    };
  }
  const cll = list?.find((d) => d.side_data_type === "Content light level metadata");
  if (cll) out.contentLight = { maxCll: int(cll.max_content), maxFall: int(cll.max_average) };
  return out;
}

/**
 * Colour signalling of the video stream, and for PQ and HLG its HDR static metadata: from the
 * container when it carries them, else from the first frame's side data (HEVC SEI, AV1 metadata
 * OBUs), which needs a decode of one frame. A stream that cannot be read that far keeps its colour.
 */
async function colourOf(file: string, v: FfprobeStream, signal: AbortSignal | undefined): Promise<Pick<Video, "color" | "masteringDisplay" | "contentLight">> {
  const color = { primaries: known(v.color_primaries), transfer: known(v.color_transfer), matrix: known(v.color_space) };
  if (!color.primaries && !color.transfer && !color.matrix) return {};
  let hdr = hdrMetadataOf(v.side_data_list);
  const pqOrHlg = color.transfer === "smpte2084" || color.transfer === "arib-std-b67";
  if (pqOrHlg && !hdr.masteringDisplay && !hdr.contentLight && v.index !== undefined) {
    try {
      const args = ["-select_streams", String(v.index), "-read_intervals", "%+#1", "-show_frames", "-show_entries", "frame=side_data_list", file];
      const frames = (JSON.parse(await ffprobe(args, signal)) as { frames?: { side_data_list?: FfprobeSideData[] }[] }).frames ?? [];
      hdr = hdrMetadataOf(frames[0]?.side_data_list);
    } catch (e) {
      if (signal?.aborted) throw e;
    }
  }
  return { color, ...hdr };
}

/** Probes a local file; a corrupt or non-media file is input_invalid. */
export async function probe(file: string, signal?: AbortSignal): Promise<ProbeResult> {
  const out = JSON.parse(await ffprobe(["-show_format", "-show_streams", file], signal)) as FfprobeOutput;
  const streams = out.streams ?? [];
  // Cover art is a video stream of one frame: not the input's video.
  const v = streams.find((s) => s.codec_type === "video" && s.disposition?.attached_pic !== 1 && int(s.width) > 0);
  const audios = streams.filter((s) => s.codec_type === "audio");
  const a = audios[0];
  if (!out.format || (!v && !a)) throw new MediaError("input_invalid", "the file has neither a video nor an audio stream");
  const result: ProbeResult = {
    format: out.format.format_name ?? "",
    durationMs: Math.round(Math.max(0, Number(out.format.duration ?? 0) || 0) * 1000),
    sizeBytes: int(out.format.size),
    bitRate: int(out.format.bit_rate),
  };
  if (v) {
    const sar = ratio(v.sample_aspect_ratio);
    const rotation = rotationOf(v);
    result.video = {
      codec: v.codec_name ?? "",
      width: int(v.width),
      height: int(v.height),
      frameRate: Math.round((ratio(v.avg_frame_rate) || ratio(v.r_frame_rate)) * 1000) / 1000,
      bitRate: int(v.bit_rate),
      pixelFormat: v.pix_fmt ?? "",
      ...(sar > 0 && Math.abs(sar - 1) > 1e-3 ? { sampleAspectRatio: sar } : {}),
      ...(rotation !== undefined ? { rotation } : {}),
      ...(await colourOf(file, v, signal)),
    };
  }
  if (a) {
    result.audio = {
      codec: a.codec_name ?? "",
      sampleRate: int(a.sample_rate),
      channels: int(a.channels),
      channelLayout: a.channel_layout ?? "",
      bitRate: int(a.bit_rate),
    };
    result.audioStreams = audios.length;
  }
  return result;
}

/** Codec details of the first stream of an encoded file, enough to write an RFC 6381 codec string. */
export interface StreamCodec {
  codec: string;
  profile: string;
  level: number;
  pixelFormat: string;
}

/** `source` may be an ffmpeg URL such as concat:init.mp4|seg_00000.m4s (an init segment alone has no profile). */
export async function probeStreamCodec(source: string, signal?: AbortSignal): Promise<StreamCodec> {
  const out = JSON.parse(await ffprobe(["-show_streams", "-select_streams", "0", source], signal)) as FfprobeOutput;
  const s = out.streams?.[0];
  if (!s) throw new MediaError("encode_failed", `no stream in ${source}`);
  return { codec: s.codec_name ?? "", profile: s.profile ?? "", level: typeof s.level === "number" ? s.level : 0, pixelFormat: s.pix_fmt ?? "" };
}

/** The first presentation time of a media file, in seconds (0 when ffprobe reports none). */
export async function probeStartSeconds(source: string, signal?: AbortSignal): Promise<number> {
  const out = JSON.parse(await ffprobe(["-show_entries", "format=start_time", source], signal)) as { format?: { start_time?: string } };
  const start = Number(out.format?.start_time ?? 0);
  return Number.isFinite(start) ? start : 0;
}
