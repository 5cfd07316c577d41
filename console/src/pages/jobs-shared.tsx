// What the job pages share: the names of statuses and types as people read them, money, times, and
// a one-line summary of an output.
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { JobStatus, OutputStatus, OutputType, type Job, type OutputSpec } from "../../../src/gen/media/v1/job_pb.js";
import { QualityTier, VideoCodec } from "../../../src/gen/media/v1/preset_pb.js";

export const JOB_STATUS: Record<JobStatus, string> = {
  [JobStatus.UNSPECIFIED]: "unknown",
  [JobStatus.PENDING]: "pending",
  [JobStatus.PROBING]: "probing",
  [JobStatus.AWAITING_CONFIRMATION]: "awaiting confirmation",
  [JobStatus.PROCESSING]: "processing",
  [JobStatus.COMPLETED]: "completed",
  [JobStatus.FAILED]: "failed",
  [JobStatus.CANCELED]: "canceled",
  [JobStatus.PARTIAL]: "partial",
};

/** The value of `data-status` (style.css colours "ready" and "error"). */
export const jobStatusData = (s: JobStatus): string =>
  s === JobStatus.COMPLETED ? "ready" : s === JobStatus.FAILED || s === JobStatus.PARTIAL ? "error" : JOB_STATUS[s].replace(/ /g, "-");

export const OUTPUT_STATUS: Record<OutputStatus, string> = {
  [OutputStatus.UNSPECIFIED]: "unknown",
  [OutputStatus.PENDING]: "pending",
  [OutputStatus.PROCESSING]: "processing",
  [OutputStatus.COMPLETED]: "completed",
  [OutputStatus.FAILED]: "failed",
  [OutputStatus.CANCELED]: "canceled",
};

export const outputStatusData = (s: OutputStatus): string => (s === OutputStatus.COMPLETED ? "ready" : s === OutputStatus.FAILED ? "error" : OUTPUT_STATUS[s]);

export const OUTPUT_TYPE: Record<OutputType, string> = {
  [OutputType.UNSPECIFIED]: "—",
  [OutputType.MP4]: "MP4",
  [OutputType.WEBM]: "WebM",
  [OutputType.MKV]: "MKV",
  [OutputType.MOV]: "MOV",
  [OutputType.HLS]: "HLS",
  [OutputType.DASH]: "DASH",
  [OutputType.ADAPTIVE]: "HLS + DASH",
};

export const VIDEO_CODEC: Record<VideoCodec, string> = {
  [VideoCodec.UNSPECIFIED]: "—",
  [VideoCodec.H264]: "H.264",
  [VideoCodec.H265]: "H.265",
  [VideoCodec.VP9]: "VP9",
  [VideoCodec.AV1]: "AV1",
};

export const QUALITY: Record<QualityTier, string> = {
  [QualityTier.UNSPECIFIED]: "",
  [QualityTier.ECONOMY]: "economy",
  [QualityTier.STANDARD]: "standard",
  [QualityTier.PREMIUM]: "premium",
};

export const TERMINAL: ReadonlySet<JobStatus> = new Set([JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELED, JobStatus.PARTIAL]);

/** "HLS · H.264 720p", or the preset's name. */
export function describeOutput(spec: OutputSpec | undefined): string {
  if (!spec) return "—";
  if (spec.preset && spec.type === OutputType.UNSPECIFIED) return `preset ${spec.preset}`;
  const variants = spec.video.map((v) =>
    [VIDEO_CODEC[v.codec], v.resolution || (v.width && v.height ? `${v.width}×${v.height}` : "input size"), QUALITY[v.quality]].filter(Boolean).join(" "),
  );
  return [OUTPUT_TYPE[spec.type], ...variants].join(" · ");
}

/** Where the job reads from, in a few words. */
export function describeInput(job: Job): string {
  if (job.inputVideoId) return `video ${job.inputVideoId}`;
  if (job.inputOrigin) return `${job.inputOrigin.name || job.inputOrigin.id}: ${job.inputOrigin.path}`;
  return job.inputUrl || "—";
}

const EUR = new Intl.NumberFormat(undefined, { style: "currency", currency: "EUR", minimumFractionDigits: 2, maximumFractionDigits: 6 });
export const money = (eur: number | undefined): string => (eur === undefined ? "—" : EUR.format(eur));

export const when = (t: Timestamp | undefined): string => (t ? new Date(Number(t.seconds) * 1000).toLocaleString() : "—");

export const bytes = (n: bigint | number): string => {
  const v = Number(n);
  return v >= 1e9 ? `${(v / 1e9).toFixed(2)} GB` : v >= 1e6 ? `${(v / 1e6).toFixed(1)} MB` : `${Math.max(1, Math.round(v / 1e3))} kB`;
};
