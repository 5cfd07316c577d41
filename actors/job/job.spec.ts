// The job actor's decisions and fold without I/O: Create, attempts, progress, and the money of each
// outcome, with amounts computed from src/pricing.ts's table (H.264 standard ≤ 30 fps: 720p 6,000
// and 480p 4,000 micro-EUR a minute; the processing fee 10,000).
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { OutputType, SubtitleSource } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { PROCESSING_FEE_MICROS, TRANSCRIPTION_MICROS_PER_SECOND, transcribedSeconds } from "../../src/pricing.js";
import { at, createJob, decided, encodingJob, origin, output, probe, probedJob, rejected, run, specJson } from "./job.fixtures.js";
import { estimateOutputs, foldJob, JobBehavior, jobEffects } from "./job.js";
import {
  JOB_ERROR_CODES,
  processingFee,
  type JobCommand,
  type JobCommandOf,
  type JobRecord,
  type JobRequest,
  type JobState,
  type OutputState,
  type ProbeData,
} from "./messages.js";

const finish = (over: Partial<Extract<JobCommand, { type: "encode_finished" }>> = {}): JobCommand => ({
  type: "encode_finished",
  attempt: "e1",
  at: 3000,
  durationMs: 1000,
  ...over,
});
const completeOutput = (outputId: string, attempt = "e1"): JobCommand => ({
  type: "output_completed",
  attempt,
  at,
  outputId,
  url: `s3://b/${outputId}.mp4`,
  sizeBytes: 10,
});
const failOutput = (outputId: string, attempt = "e1"): JobCommand => ({
  type: "output_failed",
  attempt,
  at,
  outputId,
  failure: { code: "output_write_denied", message: "denied" },
});
const progress = (outputId: string, value: number, when = at, attempt = "e1"): JobCommand => ({
  type: "output_progress",
  attempt,
  at: when,
  outputId,
  progress: value,
});
const job = (s: JobState): JobRecord => {
  if (!s.job) throw new Error("no job");
  return s.job;
};
/** A state whose job is changed by hand: journals written by older builds, or cases no command reaches. */
const edited = (s: JobState, patch: (j: JobRecord) => Partial<JobRecord>): JobState => ({ job: { ...job(s), ...patch(job(s)) } });
const effectiveTemplate = (o: OutputState) =>
  o.spec !== null && typeof o.spec === "object" && !Array.isArray(o.spec) ? o.spec.effectivePathTemplate : undefined;
const estimates = (s: JobState) => job(s).outputs.map((o) => o.estimateMicros);
const actuals = (s: JobState) => job(s).outputs.map((o) => o.actualMicros);

describe("estimates when probed", () => {
  it("prices each output for the probed duration, in exact micro-EUR", () => {
    const s = probedJob();
    // 90 s: 720p 6,000 × 1.5 min and 480p 4,000 × 1.5 min.
    expect(estimates(s)).toEqual([9_000, 6_000]);
    expect(job(s)).toMatchObject({ status: "processing", probedAt: at, probeDurationMs: 5, inputMetadata: probe });
  });

  it("bills a clip: its start is taken off, its end cuts the input short, an end of 0 or past the input is the input's end", () => {
    const clipped = (startSeconds: number, endSeconds: number) => estimates(probedJob({ clip: { startSeconds, endSeconds } }));
    expect(clipped(10, 0)).toEqual([8_000, 5_333]); // 80 s; 5,333.3 rounds down
    expect(clipped(10, 70)).toEqual([6_000, 4_000]); // 60 s
    expect(clipped(0, 30)).toEqual([3_000, 2_000]); // 30 s
    expect(clipped(0, 120)).toEqual([9_000, 6_000]); // past the end: 90 s
    expect(clipped(10, 120)).toEqual([8_000, 5_333]);
    expect(clipped(100, 0)).toEqual([0, 0]); // starts after the input ends
    expect(clipped(60, 30)).toEqual([0, 0]); // ends before it starts
  });

  it("takes a variant's frame from the input, the audio rate for audio-only outputs, and 0 when video has no input to price from", () => {
    const outputs = [
      output("keep", "", { spec: specJson({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }) }),
      output("sound", "", { spec: specJson({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC, bitrateKbps: 128 }] }) }),
    ];
    const fhd60: ProbeData = { ...probe, video: { ...probe.video!, width: 1920, height: 1080, frameRate: 60 } };
    // 1080p at 60 fps: 9,000 × 150 % = 13,500 a minute; audio 1,000 a minute; 90 s each.
    expect(estimates(probedJob({ outputs }, fhd60))).toEqual([20_250, 1_500]);
    const audioOnly: ProbeData = {
      format: "mp3",
      durationMs: 90_000,
      sizeBytes: 1,
      bitRate: 1,
      audio: { codec: "mp3", sampleRate: 44_100, channels: 2, channelLayout: "stereo", bitRate: 1 },
    };
    expect(estimates(probedJob({ outputs }, audioOnly))).toEqual([0, 1_500]);
    expect(estimateOutputs(job(run({}, createJob({ outputs }))), audioOnly)).toEqual([0, 1_500]);
  });

  it("the probed event carries the estimates and the fold gives each output its own", () => {
    const s = run({}, createJob(), { type: "probe_started", attempt: "p1", at });
    const events = decided(s, { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 });
    expect(events).toEqual([{ type: "probed", at, metadata: probe, durationMs: 5, estimates: [9_000, 6_000] }]);
    // A journal whose probed event lacks an output's estimate folds it as 0.
    expect(foldJob(job(s), { type: "probed", at, metadata: probe, durationMs: 5, estimates: [7] }).outputs.map((o) => o.estimateMicros)).toEqual([7, 0]);
  });

  it("delayed start waits for a confirmation, which only a job awaiting one takes", () => {
    const s = probedJob({ delayedStart: true });
    expect(job(s).status).toBe("awaiting_confirmation");
    expect(estimates(s)).toEqual([9_000, 6_000]);
    const confirmed = run(s, { type: "confirm", at: 5000 });
    expect(job(confirmed)).toMatchObject({ status: "processing", confirmedAt: 5000, updatedAt: 5000 });
    expect(rejected(confirmed, { type: "confirm", at })).toEqual({
      code: Code.FailedPrecondition,
      message: "job job_1 is processing; only a job awaiting_confirmation can be confirmed",
    });
  });
});

describe("attempts", () => {
  it("a redelivered probe starts a new attempt and the old one's reports change nothing", () => {
    const twice = run({}, createJob(), { type: "probe_started", attempt: "p1", at }, { type: "probe_started", attempt: "p2", at: 2500 });
    expect(job(twice)).toMatchObject({ status: "probing", attempt: "p2", updatedAt: 2500, version: 3 });
    expect(decided(twice, { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 })).toEqual([]);
    expect(decided(twice, { type: "probe_failed", attempt: "p1", at, failure: { code: "input_invalid", message: "x" } })).toEqual([]);
    expect(job(run(twice, { type: "probed", attempt: "p2", at, metadata: probe, durationMs: 5 })).status).toBe("processing");
  });

  it("a start report of the current attempt again, or of an earlier attempt come late, changes nothing", () => {
    // p1 started at 2000 and lost its lease; p2 started at 2500 on another node. p1's start report,
    // sent again by its node while the store was away, comes after: p2 stays the attempt.
    const twice = run({}, createJob(), { type: "probe_started", attempt: "p1", at }, { type: "probe_started", attempt: "p2", at: 2500 });
    expect(decided(twice, { type: "probe_started", attempt: "p1", at })).toEqual([]);
    expect(decided(twice, { type: "probe_started", attempt: "p2", at: 2500 })).toEqual([]);
    expect(decided(twice, { type: "probe_started", attempt: "p3", at: 2500 })).toEqual([{ type: "probe_started", attempt: "p3", at: 2500 }]);
    expect(job(run(twice, { type: "probed", attempt: "p2", at: 2600, metadata: probe, durationMs: 5 })).status).toBe("processing");
    // The same for encode attempts; the probe's time says nothing of the first encode's start.
    const probed = probedJob();
    expect(decided(probed, { type: "encode_started", attempt: "e1", at: at - 1 })).toEqual([{ type: "encode_started", attempt: "e1", at: at - 1 }]);
    const encoding = run(encodingJob(), { type: "encode_started", attempt: "e2", at: 2100 });
    expect(job(encoding)).toMatchObject({ attempt: "e2", attemptAt: 2100 });
    expect(decided(encoding, { type: "encode_started", attempt: "e1", at })).toEqual([]);
    expect(decided(encoding, { type: "encode_started", attempt: "e2", at: 2100 })).toEqual([]);
    expect(decided(encoding, { type: "encode_started", attempt: "e3", at: 2100 })).toEqual([{ type: "encode_started", attempt: "e3", at: 2100 }]);
    // A journal from before attempts had a time: any other attempt's start is new.
    const { attemptAt: _, ...untimed } = job(encoding);
    expect(decided({ job: untimed }, { type: "encode_started", attempt: "e1", at })).toEqual([{ type: "encode_started", attempt: "e1", at }]);
  });

  it("a probe starts only a pending or probing job, and probe reports count only while probing", () => {
    const s = probedJob();
    expect(decided(s, { type: "probe_started", attempt: "p1", at })).toEqual([]);
    expect(decided(probedJob({ delayedStart: true }), { type: "probe_started", attempt: "p9", at })).toEqual([]);
    expect(decided(s, { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 })).toEqual([]);
    expect(decided(s, { type: "probe_failed", attempt: "p1", at, failure: { code: "input_invalid", message: "x" } })).toEqual([]);
    expect(decided(run({}, createJob()), { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 })).toEqual([]);
  });

  it("encode reports count only from the current attempt of a processing job", () => {
    const s = run(encodingJob(), { type: "encode_started", attempt: "e2", at: 2100 });
    expect(job(s)).toMatchObject({ attempt: "e2", startedAt: at, updatedAt: 2100 });
    for (const stale of [
      completeOutput("out_a"),
      failOutput("out_a"),
      progress("out_a", 50),
      finish(),
      { type: "thumbnails_done", attempt: "e1", at, results: [] } as const,
    ]) {
      expect(decided(s, stale), stale.type).toEqual([]);
    }
    // Before any encoder started, nothing reports on a job that is not processing.
    const waiting = probedJob({ delayedStart: true });
    for (const early of [
      { type: "encode_started", attempt: "e1", at } as const,
      completeOutput("out_a", "p1"),
      failOutput("out_a", "p1"),
      progress("out_a", 5, at, "p1"),
      finish({ attempt: "p1" }),
      { type: "thumbnails_done", attempt: "p1", at, results: [] } as const,
    ]) {
      expect(decided(waiting, early), early.type).toEqual([]);
    }
  });

  it("a new attempt keeps delivered outputs, keeps running ones' progress, and runs failed ones again", () => {
    const s = run(
      encodingJob({ outputs: [output("out_a", "720p"), output("out_b", "480p"), output("out_c", "480p", { pathTemplate: "c" })] }),
      completeOutput("out_a"),
      progress("out_b", 40),
      progress("out_c", 30),
      failOutput("out_c"),
    );
    expect(job(s).outputs.map((o) => [o.status, o.progress])).toEqual([
      ["completed", 100],
      ["processing", 40],
      ["failed", 30],
    ]);
    const again = run(s, { type: "encode_started", attempt: "e2", at: 2200 });
    expect(job(again).outputs.map((o) => [o.status, o.progress])).toEqual([
      ["completed", 100],
      ["processing", 40],
      ["processing", 0],
    ]);
    expect(job(again)).toMatchObject({ attempt: "e2", encoderStarted: true, startedAt: at });
  });

  it("thumbnails of the current attempt are kept", () => {
    const result = {
      url: "s3://b/t.jpg",
      key: "t.jpg",
      mode: "interval",
      index: 0,
      thumbnailIndex: 0,
      format: "jpg",
      width: 320,
      height: 180,
      timeSeconds: 1,
      sizeBytes: 9,
    };
    const s = run(encodingJob(), { type: "thumbnails_done", attempt: "e1", at: 2300, results: [result] });
    expect(job(s)).toMatchObject({ thumbnailResults: [result], updatedAt: 2300 });
  });
});

describe("progress", () => {
  it("is floored, kept below 100 until the output is delivered, and the job's is the mean of its outputs", () => {
    const s = run(encodingJob(), progress("out_a", 42.7));
    expect(job(s).outputs.map((o) => o.progress)).toEqual([42, 0]);
    expect(job(s).progress).toBe(21);
    expect(job(run(s, progress("out_a", 150))).outputs[0]!.progress).toBe(99);
    const done = run(encodingJob(), completeOutput("out_b"), progress("out_a", 33.9));
    // A delivered output counts 100: (33 + 100) / 2 = 66.5, floored.
    expect(job(done).progress).toBe(66);
    expect(job(done).outputs[1]).toMatchObject({ status: "completed", progress: 100, outputUrl: "s3://b/out_b.mp4", sizeBytes: 10 });
  });

  it("no change is news only as a keep-alive, every 20 s, and progress never goes back", () => {
    const s = run(encodingJob(), progress("out_a", 40, 10_000));
    expect(decided(s, progress("out_a", 40, 29_999))).toEqual([]);
    expect(decided(s, progress("out_a", 30, 29_999))).toEqual([]);
    expect(decided(s, progress("out_a", 30, 30_000))).toEqual([{ type: "output_progress", at: 30_000, outputId: "out_a", progress: 40 }]);
    expect(decided(s, progress("out_a", 41, 10_001))).toEqual([{ type: "output_progress", at: 10_001, outputId: "out_a", progress: 41 }]);
    expect(decided(s, progress("out_a", -5, 30_000))).toEqual([{ type: "output_progress", at: 30_000, outputId: "out_a", progress: 40 }]);
  });

  it("ignores unknown and finished outputs", () => {
    const s = run(encodingJob(), completeOutput("out_a"));
    expect(decided(s, progress("out_x", 50))).toEqual([]);
    expect(decided(s, progress("out_a", 50, 60_000))).toEqual([]);
    expect(decided(s, completeOutput("out_a"))).toEqual([]);
    expect(decided(s, completeOutput("out_x"))).toEqual([]);
    expect(decided(s, failOutput("out_a"))).toEqual([]);
    expect(decided(s, failOutput("out_x"))).toEqual([]);
    const failed = run(s, failOutput("out_b"));
    expect(decided(failed, failOutput("out_b"))).toEqual([]);
    expect(decided(failed, progress("out_b", 50, 60_000))).toEqual([]);
    expect(job(failed).outputs[1]).toMatchObject({ status: "failed", errorCode: "output_write_denied", errorMessage: "denied" });
  });
});

describe("settlement", () => {
  it("completed: each output at its estimate and the processing fee", () => {
    const s = run(encodingJob(), completeOutput("out_a"), completeOutput("out_b"), finish());
    expect(job(s)).toMatchObject({ status: "completed", progress: 100, completedAt: 3000, updatedAt: 3000, encodeDurationMs: 1000 });
    expect(job(s).errorCode).toBeUndefined();
    expect(actuals(s)).toEqual([9_000, 6_000]);
    expect(job(s).fees).toEqual([{ ...processingFee("fee_1"), voided: false, actualMicros: PROCESSING_FEE_MICROS }]);
  });

  it("partial: the delivered output and the fee, with the failed output's error", () => {
    const s = run(encodingJob(), completeOutput("out_a"), failOutput("out_b"), finish());
    expect(job(s)).toMatchObject({ status: "partial", errorCode: "output_write_denied", errorMessage: "denied", progress: 50 });
    expect(actuals(s)).toEqual([9_000, 0]);
    expect(job(s).fees[0]).toMatchObject({ voided: false, actualMicros: PROCESSING_FEE_MICROS });
  });

  it("failed: nothing is charged and the fee is voided, even after an encoder started", () => {
    const s = run(encodingJob(), finish({ failure: { code: "input_unreachable", message: "gone" } }));
    expect(job(s)).toMatchObject({ status: "failed", errorCode: "input_unreachable", errorMessage: "gone" });
    expect(job(s).outputs.map((o) => [o.status, o.errorCode])).toEqual([
      ["failed", "input_unreachable"],
      ["failed", "input_unreachable"],
    ]);
    expect(actuals(s)).toEqual([0, 0]);
    expect(job(s).fees).toEqual([{ ...processingFee("fee_1"), voided: true, actualMicros: 0 }]);
  });

  it("an encoder that finishes without reporting every output fails those with an internal error", () => {
    const s = encodingJob();
    const events = decided(s, finish());
    const internal = { code: "internal", message: "the encoder finished without reporting every output" };
    expect(events).toEqual([
      { type: "output_failed", at: 3000, outputId: "out_a", failure: internal },
      { type: "output_failed", at: 3000, outputId: "out_b", failure: internal },
      { type: "settled", at: 3000, status: "failed", failure: internal, encodeDurationMs: 1000 },
    ]);
    // Outputs no encode_started ever moved from pending count as unreported too.
    const pending = probedJob();
    expect(decided(pending, finish({ attempt: "p1" })).map((e) => e.type)).toEqual(["output_failed", "output_failed", "settled"]);
  });

  it("explains a failure by the first failed output, its code's message when it kept none, else encode_failed", () => {
    const s = run(encodingJob(), failOutput("out_a"), failOutput("out_b"));
    const settledBy = (state: JobState) => decided(state, finish()).at(-1);
    expect(settledBy(s)).toEqual({
      type: "settled",
      at: 3000,
      status: "failed",
      failure: { code: "output_write_denied", message: "denied" },
      encodeDurationMs: 1000,
    });
    const noMessage = edited(s, (j) => ({ outputs: j.outputs.map(({ errorMessage: _, ...o }): OutputState => o) }));
    expect(settledBy(noMessage)).toMatchObject({ failure: { code: "output_write_denied", message: JOB_ERROR_CODES.output_write_denied } });
    const unknownCode = edited(s, (j) => ({ outputs: j.outputs.map((o) => ({ ...o, errorCode: "gremlins" })) }));
    expect(settledBy(unknownCode)).toMatchObject({ failure: { code: "encode_failed", message: JOB_ERROR_CODES.encode_failed } });
    const noCode = edited(s, (j) => ({ outputs: j.outputs.map(({ errorCode: _, ...o }): OutputState => o) }));
    expect(settledBy(noCode)).toMatchObject({ failure: { code: "encode_failed", message: JOB_ERROR_CODES.encode_failed } });
  });

  it("charges every unit of a fee and nothing for a delivered output without an estimate", () => {
    const s = edited(run(encodingJob(), completeOutput("out_a"), completeOutput("out_b")), (j) => ({
      fees: [{ ...processingFee("fee_1"), quantity: 3 }],
      outputs: j.outputs.map(({ estimateMicros: _, ...o }, i): OutputState => (i === 0 ? o : { ...o, estimateMicros: 6_000 })),
    }));
    const settled = run(s, finish());
    expect(job(settled).fees[0]!.actualMicros).toBe(3 * PROCESSING_FEE_MICROS);
    expect(actuals(settled)).toEqual([0, 6_000]);
  });

  it("a probe failure fails the job with the probe's error and charges nothing", () => {
    const s = run(
      {},
      createJob(),
      { type: "probe_started", attempt: "p1", at },
      { type: "probe_failed", attempt: "p1", at: 2500, failure: { code: "input_invalid", message: "not media" } },
    );
    expect(job(s)).toMatchObject({ status: "failed", errorCode: "input_invalid", errorMessage: "not media", completedAt: 2500, progress: 0 });
    expect(job(s).outputs.map((o) => [o.status, o.actualMicros])).toEqual([
      ["failed", 0],
      ["failed", 0],
    ]);
    expect(job(s).fees[0]).toMatchObject({ voided: true, actualMicros: 0 });
    // No encode ran: the event and the job carry no encode duration at all.
    expect("encodeDurationMs" in job(s)).toBe(false);
    const probing = run({}, createJob(), { type: "probe_started", attempt: "p1", at });
    const [settled] = decided(probing, { type: "probe_failed", attempt: "p1", at: 2500, failure: { code: "input_invalid", message: "not media" } });
    expect(settled).toStrictEqual({ type: "settled", at: 2500, status: "failed", failure: { code: "input_invalid", message: "not media" } });
  });

  it("a job without outputs completes at 100", () => {
    const s = run(
      run({}, createJob({ outputs: [] }), { type: "probe_started", attempt: "p1", at }, { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 }),
      { type: "encode_started", attempt: "e1", at },
      finish(),
    );
    expect(job(s)).toMatchObject({ status: "completed", progress: 100 });
  });
});

describe("cancel", () => {
  it("before an encoder picked the job up voids everything; open outputs stop as canceled", () => {
    for (const s of [run({}, createJob()), probedJob(), probedJob({ delayedStart: true })]) {
      const canceled = run(s, { type: "cancel", at: 2600 });
      expect(job(canceled)).toMatchObject({ status: "canceled", completedAt: 2600, progress: 0 });
      expect(job(canceled).errorCode).toBeUndefined();
      expect(job(canceled).outputs.map((o) => [o.status, o.actualMicros])).toEqual([
        ["canceled", 0],
        ["canceled", 0],
      ]);
      expect(job(canceled).fees).toEqual([{ ...processingFee("fee_1"), voided: true, actualMicros: 0 }]);
    }
  });

  it("after pickup charges the fee and the delivered outputs; the job's progress is where it stopped", () => {
    const canceled = run(encodingJob(), completeOutput("out_a"), progress("out_b", 40), { type: "cancel", at: 2600 });
    expect(job(canceled)).toMatchObject({ status: "canceled", progress: 70 });
    expect(job(canceled).outputs.map((o) => [o.status, o.actualMicros])).toEqual([
      ["completed", 9_000],
      ["canceled", 0],
    ]);
    expect(job(canceled).fees).toEqual([{ ...processingFee("fee_1"), voided: false, actualMicros: PROCESSING_FEE_MICROS }]);
  });

  it("an encoder's finish after the cancel changes nothing: still canceled, same money, no second settle", () => {
    const canceled = run(encodingJob(), completeOutput("out_a"), { type: "cancel", at: 2600 });
    expect(decided(canceled, finish())).toEqual([]);
    expect(decided(canceled, finish({ failure: { code: "internal", message: "stopped" } }))).toEqual([]);
    expect(decided(canceled, completeOutput("out_b"))).toEqual([]);
    expect(run(canceled, finish(), completeOutput("out_b"), progress("out_b", 80, 90_000))).toEqual(canceled);
    expect(job(canceled).fees[0]!.actualMicros).toBe(PROCESSING_FEE_MICROS);
  });

  it("a job that ended cannot be canceled", () => {
    const done = run(encodingJob(), completeOutput("out_a"), completeOutput("out_b"), finish());
    expect(rejected(done, { type: "cancel", at })).toEqual({ code: Code.FailedPrecondition, message: "job job_1 is already completed" });
    expect(rejected(run(done), { type: "confirm", at }).code).toBe(Code.FailedPrecondition);
  });

  it("a job without outputs stops at progress 0", () => {
    expect(job(run({}, createJob({ outputs: [] }), { type: "cancel", at })).progress).toBe(0);
  });
});

describe("create", () => {
  it("decides the whole record, with optional fields only when given", () => {
    const s = run({}, createJob());
    expect(job(s)).toEqual({
      id: "job_1",
      appId: "app_1",
      organizationId: "org_1",
      version: 1,
      inputUrl: "https://example.test/in.mp4",
      inputPath: "",
      inputVideoId: "",
      status: "pending",
      progress: 0,
      priority: "standard",
      outputs: [
        {
          id: "out_a",
          spec: { ...output("out_a", "720p").spec, effectivePathTemplate: "{job_id}/{output_id}" },
          status: "pending",
          progress: 0,
          outputUrl: "",
          sizeBytes: 0,
          keyPrefix: "job_1/out_a",
        },
        {
          id: "out_b",
          spec: { ...output("out_b", "480p").spec, effectivePathTemplate: "{job_id}/{output_id}" },
          status: "pending",
          progress: 0,
          outputUrl: "",
          sizeBytes: 0,
          keyPrefix: "job_1/out_b",
        },
      ],
      thumbnails: [],
      thumbnailResults: [],
      fees: [processingFee("fee_1")],
      webhookUrl: "",
      metadata: {},
      thumbnailPrefix: "job_1/thumbnails",
      delayedStart: false,
      bodyHash: "h1",
      encoderStarted: false,
      createdAt: 1000,
      updatedAt: 1000,
    });
    expect(processingFee("fee_1")).toEqual({
      id: "fee_1",
      type: "processing",
      description: "Processing fee",
      rateMicros: PROCESSING_FEE_MICROS,
      quantity: 1,
      voided: false,
    });
  });

  it("keeps what the request gives", () => {
    const o = origin({ basePath: "base" });
    const over: Partial<JobRequest> = {
      inputOrigin: o,
      inputUrlOrigin: o,
      outputOrigin: o,
      outputPathTemplate: "{job_id}/{output_id}",
      clip: { startSeconds: 1, endSeconds: 2 },
      idempotencyKey: "k",
      requestId: "req_1",
      metadata: { a: "b" },
      webhookUrl: "https://hook.test",
      priority: "premium",
      delayedStart: true,
    };
    expect(job(run({}, createJob(over)))).toMatchObject({ ...over, thumbnailPrefix: "base/job_1/thumbnails" });
  });

  it("places outputs by their own template, else the job's, else the origin's, else the default, under the base path", () => {
    const prefixes = (over: Partial<JobRequest>) => job(run({}, createJob(over, Date.UTC(2026, 10, 24, 23, 59)))).outputs.map((o) => o.keyPrefix);
    expect(prefixes({ outputOrigin: origin({ basePath: "/media/./in//", pathTemplate: "{date}/{resolution}" }) })).toEqual([
      "media/in/2026-11-24/720p",
      "media/in/2026-11-24/480p",
    ]);
    expect(
      prefixes({ outputOrigin: origin({ basePath: "m", pathTemplate: "{date}/{resolution}" }), outputPathTemplate: "{job_id}/{codec}-{resolution}" }),
    ).toEqual(["m/job_1/h264-720p", "m/job_1/h264-480p"]);
    const own = [output("out_a", "720p", { pathTemplate: "own/{output_id}/{quality}.{format}" }), output("out_b", "480p")];
    expect(prefixes({ outputs: own, outputPathTemplate: "{job_id}/{resolution}" })).toEqual(["own/out_a/standard.mp4", "job_1/480p"]);
    expect(job(run({}, createJob({ outputs: own }))).outputs.map(effectiveTemplate)).toEqual(["own/{output_id}/{quality}.{format}", "{job_id}/{output_id}"]);
    // Unknown variables are empty; an output's vars cannot change the ids.
    const sneaky = [
      output("out_a", "720p", {
        pathTemplate: "{nope}/{job_id}/{output_id}",
        vars: Object.assign({ format: "mp4", codec: "h264", resolution: "720p", quality: "standard" }, { job_id: "other" }),
      }),
    ];
    expect(prefixes({ outputs: sneaky })).toEqual(["job_1/out_a"]);
  });

  it("refuses outputs that land in one place, naming each and the one it clashes with", () => {
    const three = [output("out_a", "720p"), output("out_b", "480p"), output("out_c", "480p")];
    const r = rejected({}, createJob({ outputs: three, outputPathTemplate: "{job_id}" }));
    const clash = (i: number, with_: number) => ({
      field: `outputs[${i}].path_template`,
      description: `resolves to the same location as outputs[${with_}] (job_1); add {output_id} or {resolution}`,
    });
    expect(r).toEqual({
      code: Code.InvalidArgument,
      message: `${clash(1, 0).field}: ${clash(1, 0).description}; ${clash(2, 1).field}: ${clash(2, 1).description}`,
      violations: [clash(1, 0), clash(2, 1)],
    });
  });

  it("a reused idempotency key answers the same body with no change and refuses another", () => {
    const s = run({}, createJob());
    expect(decided(s, createJob())).toEqual([]);
    expect(rejected(s, createJob({ bodyHash: "h2" }))).toEqual({
      code: Code.AlreadyExists,
      message: "idempotency_key was used for a different request body",
      violations: [{ field: "idempotency_key", description: "already used with a different request body" }],
    });
  });

  it("every other command needs the job", () => {
    const commands: JobCommand[] = [
      { type: "probe_started", attempt: "p1", at },
      { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 1 },
      { type: "probe_failed", attempt: "p1", at, failure: { code: "internal", message: "x" } },
      { type: "confirm", at },
      { type: "cancel", at },
      { type: "encode_started", attempt: "e1", at },
      progress("out_a", 1),
      completeOutput("out_a"),
      failOutput("out_a"),
      { type: "thumbnails_done", attempt: "e1", at, results: [] },
      finish(),
      { type: "resume" },
    ];
    for (const c of commands) expect(rejected({}, c), c.type).toEqual({ code: Code.NotFound, message: "job not found" });
    expect(decided(probedJob(), { type: "resume" })).toEqual([]);
  });

  it("folds nothing into a job that does not exist, and counts every event it folds", () => {
    expect(JobBehavior.fold({}, { type: "probe_started", attempt: "p1", at })).toEqual({ job: undefined });
    const s = run({}, createJob(), { type: "probe_started", attempt: "p1", at: 1500 });
    expect(job(s)).toMatchObject({ version: 2, updatedAt: 1500, attempt: "p1", status: "probing" });
  });
});

describe("captions", () => {
  const GEN = { source: SubtitleSource.GENERATED };
  const captioned = (id: string, tracks: object[]) =>
    output(id, "720p", { spec: specJson({ type: OutputType.HLS, video: [{ codec: VideoCodec.H264, resolution: "720p" }], subtitleTracks: tracks }) });
  const track = {
    outputId: "out_a",
    trackIndex: 0,
    source: "generated" as const,
    language: "en",
    name: "English",
    url: "s3://b/t.vtt",
    key: "t.vtt",
    transcript: [{ start: 0, end: 1.5, text: "Hello." }],
  };

  it("quotes one transcription fee per generated track at probe, per second begun of the clipped audio; provided tracks are free", () => {
    const s = probedJob({
      outputs: [captioned("out_a", [GEN, { source: SubtitleSource.URL, url: "https://x/a.vtt" }, { ...GEN, language: "fr" }]), output("out_b", "480p")],
      clip: { startSeconds: 10.5, endSeconds: 0 },
    });
    const fees = job(s).fees.filter((f) => f.type === "transcription");
    expect(fees).toEqual([
      {
        id: "fee_at0",
        type: "transcription",
        unit: "second",
        outputId: "out_a",
        description: "Captions of out_a, track 0",
        rateMicros: TRANSCRIPTION_MICROS_PER_SECOND,
        quantity: 80,
        voided: false,
      },
      {
        id: "fee_at2",
        type: "transcription",
        unit: "second",
        outputId: "out_a",
        description: "Captions of out_a, track 2",
        rateMicros: TRANSCRIPTION_MICROS_PER_SECOND,
        quantity: 80,
        voided: false,
      },
    ]);
    expect(job(s).fees[0]).toEqual(processingFee("fee_1"));
    expect(transcribedSeconds(79_001)).toBe(80);
    expect(transcribedSeconds(79_000)).toBe(79);
    // No generated track: the probed event carries no fees.
    expect(
      decided(run({}, createJob(), { type: "probe_started", attempt: "p1", at }), { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 })[0],
    ).not.toHaveProperty("fees");
  });

  it("a re-probe replaces its fees instead of adding them", () => {
    const once = probedJob({ outputs: [captioned("out_a", [GEN])] });
    const twice = foldJob(job(once), { type: "probed", at, metadata: probe, durationMs: 5, estimates: [1], fees: job(once).fees.slice(1) });
    expect(twice.fees.map((f) => f.id)).toEqual(["fee_1", "fee_at0"]);
  });

  it("a transcription fee is due only with its delivered output, and the tracks of a delivered output are kept", () => {
    const req = { outputs: [captioned("out_a", [GEN]), captioned("out_b", [GEN])] };
    const s = run(
      encodingJob(req),
      {
        ...completeOutput("out_a"),
        subtitles: [track],
        chapters: [{ outputId: "out_a", trackIndex: 0, language: "en", url: "s3://b/c.vtt", key: "c.vtt", chapters: [{ start: 0, end: 1.5, title: "Hello" }] }],
      } as JobCommand,
      failOutput("out_b"),
      finish(),
    );
    expect(job(s).status).toBe("partial");
    const fees = job(s).fees;
    expect(fees.map((f) => [f.id, f.voided, f.actualMicros])).toEqual([
      ["fee_1", false, PROCESSING_FEE_MICROS],
      ["fee_at0", false, 90 * TRANSCRIPTION_MICROS_PER_SECOND],
      ["fee_bt0", true, 0],
    ]);
    expect(job(s).subtitleResults).toEqual([track]);
    expect(job(s).chapterResults).toHaveLength(1);
    // A failed job owes no transcription either.
    const failed = run(encodingJob(req), finish({ failure: { code: "internal", message: "x" } }));
    expect(job(failed).status).toBe("failed");
    expect(job(failed).fees.every((f) => f.voided && f.actualMicros === 0)).toBe(true);
  });

  it("a managed job's ladder, decided at probe, keeps the video's subtitle tracks", () => {
    const tracks = [specJson({ subtitleTracks: [{ source: SubtitleSource.GENERATED, language: "en" }] })["subtitleTracks"]!];
    const s = probedJob({ managed: { videoId: "vid_1", ladder: [720, 360], subtitleTracks: tracks.flat() as never }, outputs: [output("out_a", "720p")] });
    const spec = job(s).outputs[0]!.spec as Record<string, unknown>;
    expect(spec["subtitleTracks"]).toEqual([{ source: "SUBTITLE_SOURCE_GENERATED", language: "en" }]);
    expect(job(s).fees.map((f) => f.type)).toEqual(["processing", "transcription"]);
  });
});

describe("managed and protected outputs", () => {
  const drm = {
    scheme: "cbcs" as const,
    clearKey: true,
    kids: [{ trackClass: "sd" as const, kid: "0123456789abcdef0123456789abcdef" }],
    sealed: "iv.tag.body",
  };
  const renditions = [{ name: "640x360", codec: "h264" as const, width: 640, height: 360, sizeBytes: 7 }];

  it("keeps what the encoder reports of a completed output: its main file, renditions and sealed keys, and nothing it did not report", () => {
    const s = run(encodingJob(), {
      type: "output_completed",
      attempt: "e1",
      at,
      outputId: "out_a",
      url: "s3://b/out_a/index.m3u8",
      sizeBytes: 10,
      main: "index.m3u8",
      renditions,
      drm,
    });
    expect(job(s).outputs[0]).toMatchObject({ status: "completed", main: "index.m3u8", renditions, drm });
    const plain = job(run(encodingJob(), completeOutput("out_a"))).outputs[0]!;
    expect(plain).not.toHaveProperty("main");
    expect(plain).not.toHaveProperty("renditions");
    expect(plain).not.toHaveProperty("drm");
  });

  it("decides a managed ladder at probe with the video's protection, and keeps the output's effective path template", () => {
    const managed = { videoId: "vid_1", ladder: [720, 360], drm: { scheme: "ENCRYPTION_SCHEME_CBCS", systems: ["DRM_SYSTEM_CLEARKEY"] } };
    const created = run({}, createJob({ managed, outputs: [output("out_a", "720p")] }), { type: "probe_started", attempt: "p1", at });
    const spec = job(run(created, { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 })).outputs[0]!.spec as Record<string, unknown>;
    expect(spec).toMatchObject({
      type: "OUTPUT_TYPE_ADAPTIVE",
      drm: { scheme: "ENCRYPTION_SCHEME_CBCS", systems: ["DRM_SYSTEM_CLEARKEY"] },
      effectivePathTemplate: effectiveTemplate(job(created).outputs[0]!),
    });
    // A journal of an older build, whose spec has no effective template: the ladder's is empty, not made up.
    const older = edited(created, (j) => ({
      outputs: j.outputs.map((o) => ({ ...o, spec: { ...(o.spec as Record<string, unknown>), effectivePathTemplate: undefined } as never })),
    }));
    expect(
      (job(run(older, { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 })).outputs[0]!.spec as Record<string, unknown>)
        .effectivePathTemplate,
    ).toBe("");
  });

  it("a progressive stream's publication: playable once, then more rungs; only while its output and attempt run; a managed job tells its video", () => {
    const managed = { videoId: "vid_1" };
    const published = (rungs: typeof renditions, attempt = "e1", outputId = "out_a"): JobCommand => ({
      type: "output_published",
      attempt,
      at: at + 5,
      outputId,
      url: "managed://play/vid_1/out_a/index.m3u8",
      main: "index.m3u8",
      renditions: rungs,
      drm,
    });
    const start = encodingJob({ managed });
    const first = run(start, published([]));
    expect(job(first).outputs[0]).toMatchObject({ status: "processing", playableAt: at + 5, main: "index.m3u8", renditions: [], drm });
    const intents = (before: JobState, c: JobCommand) => {
      const events = decided(before, c);
      return jobEffects(events.reduce(JobBehavior.fold, before), events, c, before);
    };
    expect(intents(start, published([]))).toContainEqual({ kind: "video_published", outputId: "out_a" });
    expect(intents(encodingJob(), published([])).map((i) => i.kind)).not.toContain("video_published");
    // The same again is no news; more rungs are, and keep the first playable time.
    expect(decided(first, published([]))).toEqual([]);
    const more = run(first, { ...published(renditions), at: at + 9 } as JobCommand);
    expect(job(more).outputs[0]).toMatchObject({ playableAt: at + 5, renditions });
    expect(decided(more, published(renditions))).toEqual([]);
    // Another attempt's, a completed output's, an unknown output's: no change.
    expect(decided(start, published([], "e0"))).toEqual([]);
    expect(decided(start, published([], "e1", "out_x"))).toEqual([]);
    expect(decided(run(start, completeOutput("out_a")), published(renditions))).toEqual([]);
    // Completing replaces what was published with what the output became.
    const done = job(run(more, completeOutput("out_a"))).outputs[0]!;
    expect(done).toMatchObject({ status: "completed", playableAt: at + 5 });
  });

  it("tells a managed job's video how it ended once, when it settles, and no other job's", () => {
    const managed = { videoId: "vid_1" };
    const effectsOf = (over: Partial<JobRequest>, command: JobCommand) => {
      const before = run(encodingJob(over), completeOutput("out_a"), completeOutput("out_b"));
      const events = decided(before, command);
      return jobEffects(events.reduce(JobBehavior.fold, before), events, command, before).map((i) => i.kind);
    };
    expect(effectsOf({ managed }, finish())).toContain("video");
    expect(effectsOf({}, finish())).not.toContain("video");
    const running = (over: Partial<JobRequest>) => {
      const before = encodingJob(over);
      const events = decided(before, progress("out_a", 50));
      expect(events).toHaveLength(1);
      return jobEffects(events.reduce(JobBehavior.fold, before), events, progress("out_a", 50), before).map((i) => i.kind);
    };
    expect(running({ managed })).not.toContain("video");
  });
});

describe("a ladder split into chunks", () => {
  const spans = [{ start: 0, end: 60 }, { start: 60, end: 120 }, { start: 120 }];
  const planned = (over: Partial<JobCommandOf<"chunks_planned">> = {}): JobCommand => ({
    type: "chunks_planned",
    attempt: "e1",
    at,
    outputId: "out_a",
    spans,
    ...over,
  });
  const rendition = { playlist: "1280x720/index.m3u8", codecs: "avc1.64001f", segments: [{ uri: "seg_00015.ts", duration: 4, bytes: 1000 }] };
  const done = (part: number, node = "n2"): JobCommand => ({ type: "chunk_done", at: at + 1, outputId: "out_a", part, node, renditions: [rendition] });
  const effects = (before: JobState, command: JobCommand) => {
    const events = decided(before, command);
    return jobEffects(events.reduce(JobBehavior.fold, before), events, command, before);
  };

  it("the encode's plan queues every chunk as a task; the same plan again (a later attempt) keeps what is done", () => {
    const job = encodingJob();
    expect(effects(job, planned())).toContainEqual({ kind: "chunk_tasks", parts: [0, 1, 2] });
    const split = run(job, planned(), done(1));
    expect(split.job!.chunked).toEqual({ outputId: "out_a", spans, done: [null, { node: "n2", at: at + 1, renditions: [rendition] }, null] });
    const again = run(split, { type: "encode_started", attempt: "e2", at });
    expect(decided(again, planned({ attempt: "e2" }))).toEqual([]);
    // Only the current attempt plans; other chunks start over.
    expect(decided(again, planned())).toEqual([]);
    expect(run(again, planned({ attempt: "e2", spans: [{ start: 0, end: 30 }, { start: 30 }] })).job!.chunked!.done).toEqual([null, null]);
  });

  it("chunks must follow one another from 0, at least two, only the last open", () => {
    const job = encodingJob();
    for (const bad of [
      [{ start: 0 }],
      [{ start: 5, end: 60 }, { start: 60 }],
      [{ start: 0, end: 60 }, { start: 61 }],
      [{ start: 0 }, { start: 60 }],
      [
        { start: 0, end: 60 },
        { start: 60, end: 70 },
      ],
    ])
      expect(rejected(job, planned({ spans: bad })).code).toBe(Code.InvalidArgument);
  });

  it("a chunk is done once, from any node; a chunk of no plan, out of range, or of an ended job is no change", () => {
    const split = run(encodingJob(), planned());
    expect(decided(split, done(0))).toHaveLength(1);
    expect(decided(run(split, done(0)), done(0, "n3"))).toEqual([]);
    expect(decided(split, done(3))).toEqual([]);
    expect(decided(split, { ...done(0), outputId: "out_b" } as JobCommand)).toEqual([]);
    expect(decided(encodingJob(), done(0))).toEqual([]);
    expect(decided(run(split, { type: "cancel", at }), done(0))).toEqual([]);
    // No change is told to no one.
    expect(effects(run(split, done(0)), done(0))).toEqual([]);
  });

  it("a chunk that fails, or is lost too often, fails its output and not the job: the encode reports the rest", () => {
    const split = run(encodingJob(), planned());
    const failure = { code: "encode_failed" as const, message: "ffmpeg failed" };
    const failed = run(split, { type: "chunk_failed", at, outputId: "out_a", part: 2, failure });
    expect(failed.job!.status).toBe("processing");
    expect(failed.job!.outputs[0]).toMatchObject({ status: "failed", errorCode: "encode_failed" });
    const lost = run(split, { type: "task_abandoned", task: "chunk", part: 1, lostOn: ["n1", "n2", "n1"], at });
    expect(lost.job!.status).toBe("processing");
    expect(lost.job!.outputs[0]).toMatchObject({ status: "failed", errorCode: "encoder_lost" });
    expect(decided(lost, { type: "task_abandoned", task: "chunk", part: 1, lostOn: ["n1"], at })).toEqual([]);
  });

  it("a resumed job queues its encode and the chunks not done; look changes nothing", () => {
    const split = run(encodingJob(), planned(), done(0));
    expect(jobEffects(split, [], { type: "resume" }, split)).toEqual([
      { kind: "task", task: "encode" },
      { kind: "chunk_tasks", parts: [1, 2] },
    ]);
    expect(decided(split, { type: "look" })).toEqual([]);
    expect(rejected({}, { type: "look" }).code).toBe(Code.NotFound);
  });
});
