// Fakes for the pipeline spec: a job that answers reports as its actor would, storage in memory,
// and executors that write small media playlists and segments in milliseconds and report their
// facts (codecs, first timestamps). Plans reaching them are deep-frozen: an assignment into a plan
// after planning throws.
import { create, toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ChunkRendition, JobCommand, JobRecord, OutputState } from "../actors/job/messages.js";
import { BlobError, type BlobStore } from "../src/blob/index.js";
import { loadConfig } from "../src/config.js";
import type { ContentKey } from "../src/drm/types.js";
import { OutputSpecSchema } from "../src/gen/media/v1/job_pb.js";
import { createLogger } from "../src/log.js";
import type { ManagedStorage } from "../src/managed-storage.js";
import { SecretBox } from "../src/secrets.js";
import type { ContentAwareLadder } from "./content-aware.js";
import { hlsFactsOf } from "./manifests/hls-facts.js";
import type { OutputPlan } from "./plan.js";
import type { ProbeResult } from "./probe.js";
import { ReportError, type Reports } from "./reports.js";
import type { Executors, TaskContext } from "./steps/context.js";
import { writeTrackFiles } from "./subtitle-tracks.js";

export const PROBE: ProbeResult = {
  format: "mov,mp4,m4a,3gp,3g2,mj2",
  durationMs: 60_000,
  sizeBytes: 10_000_000,
  bitRate: 8_000_000,
  video: { codec: "h264", width: 1920, height: 1080, frameRate: 30, bitRate: 7_800_000, pixelFormat: "yuv420p" },
  audio: { codec: "aac", sampleRate: 44100, channels: 2, channelLayout: "stereo", bitRate: 128_000 },
  audioStreams: 1,
};

/** An OutputSpec as the job keeps it (proto JSON). */
export function specJson(init: MessageInitShape<typeof OutputSpecSchema>): JsonObject {
  return toJson(OutputSpecSchema, create(OutputSpecSchema, init)) as JsonObject;
}

export function outputOf(id: string, init: MessageInitShape<typeof OutputSpecSchema>): OutputState {
  return { id, spec: specJson(init), status: "pending", progress: 0, outputUrl: "", sizeBytes: 0, keyPrefix: `out/${id}` };
}

export function jobOf(outputs: OutputState[], over: Partial<JobRecord> = {}): JobRecord {
  return {
    id: "job_1",
    version: 1,
    appId: "app_1",
    organizationId: "org_1",
    inputUrl: "https://example.test/in.mp4",
    inputPath: "",
    inputVideoId: "",
    status: "processing",
    progress: 0,
    priority: "standard",
    inputMetadata: PROBE,
    outputs,
    thumbnails: [],
    thumbnailResults: [],
    fees: [],
    webhookUrl: "",
    metadata: {},
    thumbnailPrefix: "thumbs",
    delayedStart: false,
    bodyHash: "h",
    encoderStarted: true,
    createdAt: 1,
    updatedAt: 1,
    ...over,
  };
}

/** Deep-freezes a value: what the pipeline hands the executors must not change under them. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The steps a failure can be injected at. */
export type Step = "input" | "analysis" | "tracks" | "keys" | "encode" | "join" | "measure" | "upload" | "thumbnails" | "report";

export interface Harness {
  readonly context: TaskContext;
  /** Reports the job answered, in order (types only in `types`). */
  readonly sent: JobCommand[];
  readonly progress: JobCommand[];
  /** What storage holds, by key. */
  readonly stored: Map<string, string>;
  readonly plans: OutputPlan[];
  types(): string[];
  text(key: string): string;
}

const SEGMENT_SECONDS = 4;

function mediaPlaylist(segments: readonly string[], ended: boolean, init?: string): string {
  return [
    "#EXTM3U",
    `#EXT-X-VERSION:${init ? 7 : 3}`,
    `#EXT-X-TARGETDURATION:${SEGMENT_SECONDS}`,
    "#EXT-X-MEDIA-SEQUENCE:0",
    ...(init ? [`#EXT-X-MAP:URI="${init}"`] : []),
    ...segments.flatMap((s) => [`#EXTINF:${SEGMENT_SECONDS.toFixed(6)},`, s]),
    ...(ended ? ["#EXT-X-ENDLIST"] : []),
    "",
  ].join("\n");
}

/** What a plan's commands would leave: media playlists with two segments each, an MPD, or the file; the facts an executor reports. */
function writeOutputs(plan: OutputPlan, ended: boolean): void {
  mkdirSync(plan.dir, { recursive: true });
  const m = plan.hlsMaster;
  const chunked = new Set((plan.chunked?.rest ?? []).map((r) => r.file));
  if (m) {
    const facts = hlsFactsOf(m);
    for (const p of [...m.variants.map((v) => v.playlist), ...m.audio.map((a) => a.playlist)]) {
      if (chunked.has(p)) continue;
      const dir = path.dirname(path.join(plan.dir, p));
      mkdirSync(dir, { recursive: true });
      const audio = m.audio.some((a) => a.playlist === p);
      const segments = ["seg_00000.ts", "seg_00001.ts"];
      for (const s of segments) writeFileSync(path.join(dir, s), Buffer.alloc(audio ? 200 : 1000));
      writeFileSync(path.join(plan.dir, p), mediaPlaylist(segments, ended));
      facts.codecs.set(p, audio ? "mp4a.40.2" : "avc1.64001F");
    }
    facts.firstTimestampSeconds ??= 1;
  }
  if (plan.dashManifest) writeFileSync(path.join(plan.dir, plan.dashManifest.file), '<MPD minBufferTime="PT1S"><Period></Period></MPD>\n');
  if (!m && !plan.dashManifest) writeFileSync(path.join(plan.dir, plan.main), "file");
}

/** What other nodes reported for a split ladder's chunks: two segments of each chunked rung a chunk. */
export function chunksDone(plan: OutputPlan, chunks: number): ChunkRendition[][] {
  return Array.from({ length: chunks }, (_, k) =>
    (plan.chunked?.rest ?? []).map((r) => ({
      playlist: r.file,
      codecs: "avc1.640028",
      segments: [0, 1].map((i) => ({ uri: `seg_${String(2 * k + i).padStart(5, "0")}.ts`, duration: SEGMENT_SECONDS, bytes: 3000 })),
    })),
  );
}

function memoryBlob(stored: Map<string, string>, fail: () => boolean): BlobStore {
  return {
    async put(key, file) {
      if (fail()) throw new BlobError("denied", `writing ${key} was denied`);
      const text = readFileSync(file, "utf8");
      stored.set(key, text);
      return { size: Buffer.byteLength(text) };
    },
    async getToFile(key, file) {
      const text = stored.get(key);
      if (text === undefined) throw new BlobError("not_found", key);
      writeFileSync(file, text);
      return { size: text.length };
    },
    head: async (key) => (stored.has(key) ? { size: stored.get(key)!.length } : undefined),
    delete: async (key) => void stored.delete(key),
    checkRead: async () => undefined,
    url: (key) => `mem://${key}`,
    signedUrl: () => undefined,
  };
}

function ladderOf(spec: JsonObject): ContentAwareLadder {
  const video = Array.isArray(spec.video) ? spec.video : [];
  return {
    samples: [],
    cuts: [],
    scored: [],
    frameRate: 30,
    analysisMs: 5,
    reference: "",
    rungs: video.map((_, index) => ({
      index,
      name: `r${index}`,
      width: 640,
      height: 360,
      targetVmaf: 93,
      crf: 23 + index,
      maxKbps: 0,
      predictedVmaf: 93,
      predictedKbps: 800,
      trials: [],
    })),
  };
}

/** A task context whose executors are fakes; `fail` names the step that throws, with `error`. */
export function harness(root: string, job: JobRecord, o: { env?: Record<string, string>; fail?: Step; error?: Error; growing?: boolean } = {}): Harness {
  const sent: JobCommand[] = [];
  const progress: JobCommand[] = [];
  const stored = new Map<string, string>();
  const plans: OutputPlan[] = [];
  let current = job;
  const failing = (step: Step) => {
    if (o.fail === step) throw o.error ?? new Error(`${step} failed`);
  };
  const reports: Reports = {
    async ask(_job, command) {
      sent.push(command);
      if (o.fail === "report" && command.type === "output_completed") throw new ReportError("job_1 refused output_completed: unavailable");
      if (command.type === "encode_started") current = { ...current, attempt: command.attempt };
      if (command.type === "chunks_planned")
        current = { ...current, chunked: { outputId: command.outputId, spans: command.spans, done: command.spans.map(() => null) } };
      // The other nodes encode every chunk while this one encodes its own part.
      if (command.type === "look" && current.chunked) {
        const chunks = chunksDone(
          plans.find((p) => p.chunked)!,
          current.chunked.spans.length,
        );
        current = { ...current, chunked: { ...current.chunked, done: chunks.map((renditions) => ({ node: "n2", at: 1, renditions })) } };
        // join: a chunk failed on another node as many times as it may, and so the output.
        if (o.fail === "join") {
          const message = o.error?.message ?? "chunk 1 failed";
          current = { ...current, outputs: current.outputs.map((out) => ({ ...out, status: "failed" as const, errorMessage: message })) };
        }
      }
      return current;
    },
    tell: (_job, command) => void progress.push(command),
  };
  const input = path.join(root, "input.mp4");
  writeFileSync(input, "input");
  const exec: Executors = {
    async fetchInput() {
      failing("input");
      return input;
    },
    probe: async () => PROBE,
    probeStartSeconds: async () => 1,
    async analyzeContent(spec) {
      failing("analysis");
      return ladderOf(toJson(OutputSpecSchema, spec) as JsonObject);
    },
    async measureRungs(ladder) {
      failing("measure");
      for (const r of ladder.rungs) r.measuredVmaf = 94;
    },
    async encodePlan(plan, opts) {
      plans.push(deepFreeze(plan));
      failing("encode");
      writeOutputs(plan, o.growing !== true);
      await opts.whileRunning?.();
      if (o.growing) throw new Error("ffmpeg died");
      opts.onProgress?.(1);
      await opts.finish?.(new AbortController().signal);
      return { wallMs: 1 };
    },
    async startTracks(spec) {
      failing("tracks");
      const provided = spec.subtitleTracks.map((track, index) => ({
        index,
        track,
        source: "url" as const,
        language: track.language,
        name: track.name || "English",
        cues: [{ start: 0.5, end: 2, text: "Hello" }],
      }));
      return { provided, generated: Promise.resolve([]) };
    },
    writeTrackFiles,
    async renderThumbnails(_specs, _input, opts) {
      failing("thumbnails");
      mkdirSync(opts.dir, { recursive: true });
      writeFileSync(path.join(opts.dir, "thumb_0.jpg"), "jpg");
      return [{ file: "thumb_0.jpg", mode: "single", index: 0, thumbnailIndex: 0, format: "jpg", width: 320, height: 180, timeSeconds: 1, sizeBytes: 3 }];
    },
    async contentKeys(_spec, _outputId, plan): Promise<ContentKey[]> {
      failing("keys");
      const classes = plan.packaging ? [...new Set(plan.packaging.streams.map((s) => s.trackClass))] : (["sd"] as const);
      return classes.map((trackClass, i) => ({ trackClass, kid: `${i}`.repeat(32), key: `${i + 1}`.repeat(32) }));
    },
    outputBlob: () => memoryBlob(stored, () => o.fail === "upload"),
  };
  const config = loadConfig({ MEDIA_DATA_DIR: root, MEDIA_SERVER_SECRET: "s".repeat(40), ...o.env });
  const managed = { blob: memoryBlob(stored, () => false) } as unknown as ManagedStorage;
  const context: TaskContext = {
    d: { box: new SecretBox("s".repeat(40)), guard: {} as never, config, log: createLogger("silent"), managed },
    reports,
    lease: { queue: async () => ({ ok: true, state: {} }), nodeId: "n1", workerClass: "standard", leaseMs: 30_000, life: "l1" },
    workRoot: path.join(root, "work"),
    recogniser: { transcribe: () => Promise.reject(new Error("no speech here")), chapters: async () => [], stop: async () => undefined },
    exec,
  };
  return {
    context,
    sent,
    progress,
    stored,
    plans,
    types: () => sent.map((c) => c.type),
    text(key) {
      const t = stored.get(key);
      if (t === undefined) throw new Error(`nothing stored at ${key}; stored: ${[...stored.keys()].join(", ")}`);
      return t;
    },
  };
}
