// The encoder arguments of one planned rendition (renditions.ts), a small writer per codec: x264,
// x265, libvpx-vp9 and SVT-AV1, then the colour flags and the keyframes every streaming output
// needs. Pure; the layout planners (planners/) place them after each video stream's map.
import { VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { colourFlags, svtAv1HdrParams, x265HdrParams } from "./hdr.js";
import { MediaError } from "./media-errors.js";
import type { Rendition, RenditionContext } from "./renditions.js";

/** One rendition written as a video stream of its output file. */
interface VideoStream {
  readonly r: Rendition;
  /** The stream specifier's suffix: `:v:N`. */
  readonly s: string;
  /** A streaming output's rendition: players switch at segment boundaries, so keyframes fall only there. */
  readonly streaming: boolean;
  /** Written into an ISO-BMFF file (mp4, mov, fmp4 segments). */
  readonly isoBmff: boolean;
}

const strings = (...xs: readonly (string | number)[]) => xs.map(String);

/** Rate control as every codec but VP9 writes it: a CRF, else a target bitrate. */
const crfOrBitrate = ({ r: { rate }, s }: VideoStream) => (rate.mode === "crf" ? strings(`-crf${s}`, rate.crf) : [`-b${s}`, `${rate.targetKbps}k`]);

/** The VBV cap, when the rate has one. */
const vbv = ({ r: { rate }, s }: VideoStream) => (rate.maxKbps > 0 ? [`-maxrate${s}`, `${rate.maxKbps}k`, `-bufsize${s}`, `${rate.bufferKbps}k`] : []);

const levelNumber = (level: string) => {
  const [major = "0", minor = "0"] = level.split(".");
  return Number(major) * 10 + Number(minor);
};

function x264Args(v: VideoStream): string[] {
  const { r, s, streaming } = v;
  const { rate, keyint } = r;
  const o = r.variant.h264;
  return strings(
    ...[`-c${s}`, "libx264", `-preset${s}`, r.preset],
    ...(o?.tune ? [`-tune${s}`, o.tune] : []),
    ...(o?.profile ? [`-profile${s}`, o.profile] : []),
    ...(o?.level ? [`-level${s}`, o.level] : []),
    ...crfOrBitrate(v),
    ...(rate.mode === "cbr" ? [`-minrate${s}`, `${rate.targetKbps}k`, `-x264-params${s}`, "nal-hrd=cbr"] : []),
    ...vbv(v),
    ...[`-g${s}`, keyint],
    // Streaming renditions switch at segment boundaries: no scene-cut keyframes between them.
    ...(streaming ? [`-keyint_min${s}`, keyint, `-sc_threshold${s}`, 0] : []),
    ...(o?.bframes !== undefined ? [`-bf${s}`, o.bframes] : []),
    ...(o?.refs ? [`-refs${s}`, o.refs] : []),
  );
}

function x265Args(v: VideoStream): string[] {
  const { r, s, streaming } = v;
  const o = r.variant.h265;
  const params = [
    ...[`keyint=${r.keyint}`, "log-level=error"],
    ...(streaming ? [`min-keyint=${r.keyint}`, "scenecut=0", "open-gop=0"] : []),
    ...(o?.bframes !== undefined ? [`bframes=${o.bframes}`] : []),
    ...(o?.refs ? [`ref=${o.refs}`] : []),
    ...(o?.level ? [`level-idc=${o.level}`] : []),
    ...(r.rate.mode === "cbr" ? ["strict-cbr=1"] : []),
    ...(r.colour ? x265HdrParams(r.colour) : []),
  ];
  return [
    ...[`-c${s}`, "libx265", `-preset${s}`, r.preset],
    ...(o?.tune ? [`-tune${s}`, o.tune] : []),
    ...(o?.profile ? [`-profile${s}`, o.profile] : []),
    ...crfOrBitrate(v),
    ...vbv(v),
    ...[`-x265-params${s}`, params.join(":")],
    // Apple players and browsers want HEVC in ISO-BMFF tagged hvc1 (parameter sets in the sample entry).
    ...(v.isoBmff ? [`-tag${s}`, "hvc1"] : []),
  ];
}

function vp9Args(v: VideoStream): string[] {
  const { r, s, streaming } = v;
  const { rate, keyint } = r;
  const o = r.variant.vp9;
  const deadline = r.preset;
  return strings(
    ...[`-c${s}`, "libvpx-vp9", `-deadline${s}`, deadline, `-cpu-used${s}`, o?.cpuUsed ?? (deadline === "realtime" ? 8 : 2)],
    // Row-based multithreading only changes speed, never the stream: always on.
    ...[`-row-mt${s}`, 1],
    ...(o?.tileColumns !== undefined ? [`-tile-columns${s}`, o.tileColumns] : []),
    ...(o?.profile ? [`-profile${s}`, o.profile] : []),
    // libvpx: crf with -b:v 0 is constant quality; with a bitrate it is constrained quality.
    ...(rate.mode === "crf"
      ? [`-crf${s}`, rate.crf, `-b${s}`, rate.maxKbps > 0 ? `${rate.maxKbps}k` : "0"]
      : [`-b${s}`, `${rate.targetKbps}k`, `-minrate${s}`, rate.mode === "cbr" ? `${rate.targetKbps}k` : "0", ...vbv(v)]),
    ...[`-g${s}`, keyint],
    ...(streaming ? [`-keyint_min${s}`, keyint] : []),
  );
}

function svtAv1Args(v: VideoStream): string[] {
  const { r, s } = v;
  const o = r.variant.av1;
  const params = [
    ...(o?.tune ? [`tune=${o.tune === "psnr" ? 1 : 0}`] : []),
    ...(o?.filmGrain ? [`film-grain=${o.filmGrain}`] : []),
    // SVT-AV1 1.4 has CBR only with the low-delay prediction structure.
    ...(r.rate.mode === "cbr" ? ["rc=2", "pred-struct=1"] : []),
    ...(r.colour ? svtAv1HdrParams(r.colour) : []),
  ];
  return strings(
    ...[`-c${s}`, "libsvtav1", `-preset${s}`, r.preset],
    ...(o?.level ? [`-level${s}`, levelNumber(o.level)] : []),
    ...crfOrBitrate(v),
    // With crf, -maxrate is SVT-AV1's capped CRF.
    ...(r.rate.mode === "crf" ? vbv(v) : []),
    ...[`-g${s}`, r.keyint],
    ...(params.length > 0 ? [`-svtav1-params${s}`, params.join(":")] : []),
  );
}

const CODEC_ARGS: Partial<Record<VideoCodec, (v: VideoStream) => string[]>> = {
  [VideoCodec.H264]: x264Args,
  [VideoCodec.H265]: x265Args,
  [VideoCodec.VP9]: vp9Args,
  [VideoCodec.AV1]: svtAv1Args,
};

/** Encoder arguments of one rendition written as video stream n of its output file. */
export function videoArgs(r: Rendition, n: number, ctx: RenditionContext): string[] {
  const codecArgs = CODEC_ARGS[r.codecId];
  if (!codecArgs) throw new MediaError("internal", `unsupported video codec ${r.codecId}`);
  const s = `:v:${n}`;
  const segmentSeconds = ctx.segmentSeconds;
  return [
    ...codecArgs({ r, s, streaming: segmentSeconds !== undefined, isoBmff: ctx.isoBmff }),
    ...(r.colour ? colourFlags(r.colour, s) : []),
    ...(segmentSeconds !== undefined ? [`-force_key_frames${s}`, keyframesAt(segmentSeconds, ctx.firstSegmentSeconds)] : []),
  ];
}

/** ffmpeg's -force_key_frames expression: every segment's start, and the end of a shorter first one. */
export function keyframesAt(segmentSeconds: number, firstSegmentSeconds?: number): string {
  if (firstSegmentSeconds === undefined) return `expr:gte(t,n_forced*${segmentSeconds})`;
  return `expr:if(lt(n_forced,2),gte(t,n_forced*${firstSegmentSeconds}),gte(t,(n_forced-1)*${segmentSeconds}))`;
}
