// Job records to wire messages: the job resource with its outputs, fees and cost breakdown. Money
// is integer micro-EUR in the record and EUR numbers only here; lines sum exactly to the totals
// because the totals are sums of the same integers.
import { create, fromJson } from "@bufbuild/protobuf";
import type { FeeState, JobRecord, OutputState } from "../actors/job/messages.js";
import {
  ContentAwareRungSchema,
  CostBreakdownLineSchema,
  CostBreakdownSchema,
  CostLineType,
  JobOutputSchema,
  JobPriority,
  JobSchema,
  JobStatus,
  OutputSpecSchema,
  OutputStatus,
  ThumbnailFormat,
  ThumbnailMode,
  ThumbnailSpecSchema,
  type Job,
  type OriginRef,
  type OutputSpec,
  SubtitleSource,
} from "../src/gen/media/v1/job_pb.js";
import { OriginProvider } from "../src/gen/media/v1/origin_pb.js";
import type { OriginRecord } from "../src/origins.js";
import { CURRENCY, eur } from "../src/pricing.js";
import { ts } from "./present.js";

const STATUS: Record<JobRecord["status"], JobStatus> = {
  pending: JobStatus.PENDING,
  probing: JobStatus.PROBING,
  awaiting_confirmation: JobStatus.AWAITING_CONFIRMATION,
  processing: JobStatus.PROCESSING,
  completed: JobStatus.COMPLETED,
  failed: JobStatus.FAILED,
  canceled: JobStatus.CANCELED,
  partial: JobStatus.PARTIAL,
};
export const JOB_STATUS_NAMES: Partial<Record<JobStatus, JobRecord["status"]>> = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k]));

const OUTPUT_STATUS: Record<OutputState["status"], OutputStatus> = {
  pending: OutputStatus.PENDING,
  processing: OutputStatus.PROCESSING,
  completed: OutputStatus.COMPLETED,
  failed: OutputStatus.FAILED,
  canceled: OutputStatus.CANCELED,
};

export const PRIORITY: Record<JobRecord["priority"], JobPriority> = {
  economy: JobPriority.ECONOMY,
  standard: JobPriority.STANDARD,
  premium: JobPriority.PREMIUM,
};

const PROVIDER: Record<OriginRecord["provider"], OriginProvider> = {
  gcs: OriginProvider.GCS,
  s3: OriginProvider.S3,
  r2: OriginProvider.R2,
  http: OriginProvider.HTTP,
};
const MODE: Record<string, ThumbnailMode> = {
  single: ThumbnailMode.SINGLE,
  interval: ThumbnailMode.INTERVAL,
  sprite: ThumbnailMode.SPRITE,
  animated: ThumbnailMode.ANIMATED,
};
const FORMAT: Record<string, ThumbnailFormat> = { jpg: ThumbnailFormat.JPG, png: ThumbnailFormat.PNG, webp: ThumbnailFormat.WEBP, mp4: ThumbnailFormat.MP4 };

function originRef(o: OriginRecord | undefined, p: string): OriginRef | undefined {
  return o && ({ id: o.id, name: o.name, provider: PROVIDER[o.provider], path: p, bucket: o.provider === "http" ? "" : o.bucket } as OriginRef);
}

const feeMicros = (f: FeeState) => f.rateMicros * f.quantity;

/**
 * An output's spec as submitted, with its read-only parts: content_aware's rungs and analysis time
 * come from what the encoder reported (a caller's own values are never echoed).
 */
function outputSpecOf(o: OutputState, durationMs: number | undefined): OutputSpec {
  const spec = fromJson(OutputSpecSchema, o.spec);
  if (!spec.contentAware) return spec;
  const rungs = (o.renditions ?? []).filter((r) => r.contentAware);
  const seconds = Math.max(0.001, (durationMs ?? 0) / 1000);
  spec.contentAware.rungs = rungs.map((r) =>
    create(ContentAwareRungSchema, {
      name: r.name,
      width: r.width,
      height: r.height,
      targetVmaf: r.contentAware!.targetVmaf,
      crf: r.contentAware!.crf,
      maxBitrateKbps: r.contentAware!.maxKbps,
      predictedVmaf: r.contentAware!.predictedVmaf,
      predictedBitrateKbps: r.contentAware!.predictedKbps,
      measuredVmaf: r.contentAware!.measuredVmaf ?? 0,
      bitrateKbps: durationMs ? Math.round((r.sizeBytes * 8) / 1000 / seconds) : 0,
    }),
  );
  spec.contentAware.analysisSeconds = rungs.length > 0 ? Math.round(rungs[0]!.contentAware!.analysisMs) / 1000 : 0;
  return spec;
}

/** `signed` maps thumbnail keys to their time-limited URLs, when the output storage can sign them. */
export function jobMessage(j: JobRecord, signed?: ReadonlyMap<string, string>): Job {
  const probed = j.probedAt !== undefined;
  const settled = j.completedAt !== undefined;
  // Outputs exist for callers once probing has sized them; a job that ended before has none.
  const outputs = probed ? j.outputs : [];
  const lines = [
    ...outputs.map((o) =>
      create(CostBreakdownLineSchema, {
        type: CostLineType.OUTPUT,
        referenceId: o.id,
        description: `Output ${o.id}`,
        ...(o.estimateMicros !== undefined ? { estimatedAmountEur: eur(o.estimateMicros) } : {}),
        ...(settled ? { actualAmountEur: eur(o.actualMicros ?? 0) } : {}),
      }),
    ),
    ...j.fees.map((f) =>
      create(CostBreakdownLineSchema, {
        type: CostLineType.FEE,
        referenceId: f.id,
        description: f.description,
        ...(probed ? { estimatedAmountEur: eur(feeMicros(f)) } : {}),
        ...(settled ? { actualAmountEur: eur(f.actualMicros ?? 0) } : {}),
      }),
    ),
  ];
  const estimated = probed ? outputs.reduce((s, o) => s + (o.estimateMicros ?? 0), 0) + j.fees.reduce((s, f) => s + feeMicros(f), 0) : undefined;
  const actual = settled ? outputs.reduce((s, o) => s + (o.actualMicros ?? 0), 0) + j.fees.reduce((s, f) => s + (f.actualMicros ?? 0), 0) : undefined;
  const totals = {
    ...(estimated !== undefined ? { totalEstimatedCost: eur(estimated) } : {}),
    ...(actual !== undefined ? { totalActualCost: eur(actual) } : {}),
  };
  return create(JobSchema, {
    id: j.id,
    object: "job",
    appId: j.appId,
    inputUrl: j.inputUrl,
    inputOrigin: originRef(j.inputOrigin, j.inputPath),
    outputOrigin: originRef(j.outputOrigin, j.outputOrigin?.basePath ?? ""),
    inputVideoId: j.inputVideoId,
    videoId: j.managed?.videoId,
    status: STATUS[j.status],
    progress: j.progress,
    priority: PRIORITY[j.priority],
    inputMetadata: j.inputMetadata && {
      format: j.inputMetadata.format,
      durationMs: BigInt(j.inputMetadata.durationMs),
      sizeBytes: BigInt(j.inputMetadata.sizeBytes),
      bitRate: BigInt(j.inputMetadata.bitRate),
      video: j.inputMetadata.video && { ...j.inputMetadata.video, bitRate: BigInt(j.inputMetadata.video.bitRate) },
      audio: j.inputMetadata.audio && { ...j.inputMetadata.audio, bitRate: BigInt(j.inputMetadata.audio.bitRate) },
    },
    outputs: outputs.map((o) =>
      create(JobOutputSchema, {
        id: o.id,
        spec: outputSpecOf(o, j.inputMetadata?.durationMs),
        status: OUTPUT_STATUS[o.status],
        progress: o.progress,
        outputUrl: o.outputUrl,
        outputSizeBytes: BigInt(o.sizeBytes),
        errorCode: o.errorCode ?? "",
        errorMessage: o.errorMessage ?? "",
      }),
    ),
    thumbnails: j.thumbnails.map((t) => fromJson(ThumbnailSpecSchema, t)),
    thumbnailResults: j.thumbnailResults.map((r) => ({
      url: r.url,
      signedUrl: signed?.get(r.key) ?? "",
      mode: MODE[r.mode] ?? ThumbnailMode.UNSPECIFIED,
      index: r.index,
      thumbnailIndex: r.thumbnailIndex,
      format: FORMAT[r.format] ?? ThumbnailFormat.UNSPECIFIED,
      width: r.width,
      height: r.height,
      timeSeconds: r.timeSeconds,
      sizeBytes: BigInt(r.sizeBytes),
    })),
    subtitleResults: (j.subtitleResults ?? []).map((r) => ({
      outputId: r.outputId,
      trackIndex: r.trackIndex,
      source: r.source === "generated" ? SubtitleSource.GENERATED : SubtitleSource.URL,
      language: r.language,
      name: r.name,
      url: r.url,
      signedUrl: signed?.get(r.key) ?? "",
      transcript: (r.transcript ?? []).map((t) => ({ startSeconds: t.start, endSeconds: t.end, text: t.text })),
    })),
    chapterResults: (j.chapterResults ?? []).map((r) => ({
      outputId: r.outputId,
      trackIndex: r.trackIndex,
      language: r.language,
      url: r.url,
      signedUrl: signed?.get(r.key) ?? "",
      chapters: r.chapters.map((c) => ({ startSeconds: c.start, endSeconds: c.end, title: c.title })),
    })),
    ...totals,
    minimumChargeApplied: false,
    // Voided fees are omitted from fees; their breakdown line settles at 0.
    fees: j.fees
      .filter((f) => !f.voided)
      .map((f) => ({
        id: f.id,
        feeType: f.type,
        description: f.description,
        unit: f.unit ?? "job",
        quantity: f.quantity,
        rate: eur(f.rateMicros),
        amount: eur(feeMicros(f)),
        currency: CURRENCY,
      })),
    costBreakdown: create(CostBreakdownSchema, { lines, ...totals }),
    errorCode: j.errorCode ?? "",
    errorMessage: j.errorMessage ?? "",
    webhookUrl: j.webhookUrl,
    metadata: { ...j.metadata },
    ...(j.outputPathTemplate !== undefined ? { outputPathTemplate: j.outputPathTemplate } : {}),
    clip: j.clip && { startSeconds: j.clip.startSeconds, endSeconds: j.clip.endSeconds },
    delayedStart: j.delayedStart,
    currency: CURRENCY,
    execution:
      probed || settled
        ? {
            probeDurationMs: BigInt(j.probeDurationMs ?? 0),
            encodeDurationMs: BigInt(j.encodeDurationMs ?? 0),
            totalDurationMs: BigInt((j.completedAt ?? j.updatedAt) - j.createdAt),
          }
        : undefined,
    createdAt: ts(j.createdAt),
    updatedAt: ts(j.updatedAt),
    probedAt: ts(j.probedAt),
    startedAt: ts(j.startedAt),
    completedAt: ts(j.completedAt),
    confirmedAt: ts(j.confirmedAt),
  });
}
