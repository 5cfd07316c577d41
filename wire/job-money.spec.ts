// The job actor's rules without any I/O (lifecycle, attempts, the money of each outcome), checked
// through the job's wire message, where every amount must equal the sum of its lines.
import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { OutputSpecSchema, OutputType } from "../src/gen/media/v1/job_pb.js";
import { VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { PROCESSING_FEE_MICROS } from "../src/pricing.js";
import { jobMessage } from "./present-job.js";
import type { Rejection } from "../actors/host.js";
import { JobBehavior } from "../actors/job/job.js";
import type { JobRecord, JobRequest } from "../actors/job/messages.js";
import { at, createJob, probe, run } from "../actors/job/job.fixtures.js";

const started = (delayed = false) =>
  run(
    {},
    createJob({ delayedStart: delayed }),
    { type: "probe_started", attempt: "p1", at },
    { type: "probed", attempt: "p1", at, metadata: probe, durationMs: 5 },
  );

/** Every wire amount equals the sum of its lines, exactly. */
function expectLinesSum(job: JobRecord) {
  const m = jobMessage(job);
  const sum = (k: "estimatedAmountEur" | "actualAmountEur") => m.costBreakdown!.lines.reduce((s, l) => s + Math.round((l[k] ?? 0) * 1e6), 0);
  if (m.totalEstimatedCost !== undefined) expect(sum("estimatedAmountEur")).toBe(Math.round(m.totalEstimatedCost * 1e6));
  if (m.totalActualCost !== undefined) expect(sum("actualAmountEur")).toBe(Math.round(m.totalActualCost * 1e6));
  expect(m.costBreakdown!.totalEstimatedCost).toBe(m.totalEstimatedCost);
  expect(m.costBreakdown!.totalActualCost).toBe(m.totalActualCost);
  return m;
}

describe("JobActor", () => {
  it("Create decides the job: outputs under the origin's base path and template, the fee, pending", () => {
    const origin = { basePath: "media/", pathTemplate: "{date}/{job_id}/{resolution}" } as JobRequest["outputOrigin"];
    const s = run({}, createJob({ outputOrigin: origin }));
    expect(s.job!.status).toBe("pending");
    expect(s.job!.outputs.map((o) => o.keyPrefix)).toEqual(["media/1970-01-01/job_1/720p", "media/1970-01-01/job_1/480p"]);
    expect(s.job!.outputs.map((o) => (o.spec as { effectivePathTemplate: string }).effectivePathTemplate)).toEqual([
      "{date}/{job_id}/{resolution}",
      "{date}/{job_id}/{resolution}",
    ]);
    expect(s.job!.thumbnailPrefix).toBe("media/job_1/thumbnails");
    expect(s.job!.fees.map((f) => f.id)).toEqual(["fee_1"]);
    // Two outputs that land in one place are refused, naming the second.
    const clash = JobBehavior.decide({}, createJob({ outputPathTemplate: "{job_id}" })) as Rejection;
    expect(clash.violations).toEqual([
      { field: "outputs[1].path_template", description: "resolves to the same location as outputs[0] (job_1); add {output_id} or {resolution}" },
    ]);
  });

  it("a reused idempotency key returns the job for the same body and refuses a different one", () => {
    const s = run({}, createJob());
    expect(JobBehavior.decide(s, createJob())).toEqual([]);
    const refused = JobBehavior.decide(s, createJob({ bodyHash: "h2" })) as Rejection;
    expect(refused.violations?.[0]?.field).toBe("idempotency_key");
  });

  it("estimates after probing and hides outputs until then", () => {
    const created = run({}, createJob());
    const before = jobMessage(created.job!);
    expect(before.outputs).toEqual([]);
    expect(before.totalEstimatedCost).toBeUndefined();
    const s = started();
    expect(s.job!.status).toBe("processing");
    const m = expectLinesSum(s.job!);
    expect(m.outputs).toHaveLength(2);
    expect(m.totalEstimatedCost).toBeGreaterThan(0);
    expect(m.totalActualCost).toBeUndefined();
  });

  it("completed: every output and the processing fee are charged", () => {
    const s = run(
      started(),
      { type: "encode_started", attempt: "e1", at },
      { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "s3://b/a.mp4", sizeBytes: 10 },
      { type: "output_completed", attempt: "e1", at, outputId: "out_b", url: "s3://b/b.mp4", sizeBytes: 10 },
      { type: "encode_finished", attempt: "e1", at: 3000, durationMs: 1000 },
    );
    expect(s.job!.status).toBe("completed");
    const m = expectLinesSum(s.job!);
    expect(m.totalActualCost).toBe(m.totalEstimatedCost);
    expect(m.fees).toHaveLength(1);
    expect(m.fees[0]!.amount).toBe(PROCESSING_FEE_MICROS / 1e6);
  });

  it("partial: the delivered output and the fee; the failed one settles at 0", () => {
    const s = run(
      started(),
      { type: "encode_started", attempt: "e1", at },
      { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "s3://b/a.mp4", sizeBytes: 10 },
      { type: "output_failed", attempt: "e1", at, outputId: "out_b", failure: { code: "encode_failed", message: "x" } },
      { type: "encode_finished", attempt: "e1", at, durationMs: 1 },
    );
    expect(s.job!.status).toBe("partial");
    expect(s.job!.errorCode).toBe("encode_failed");
    const m = expectLinesSum(s.job!);
    const b = m.costBreakdown!.lines.find((l) => l.referenceId === "out_b")!;
    expect(b.actualAmountEur).toBe(0);
    expect(m.totalActualCost).toBe((s.job!.outputs[0]!.estimateMicros! + PROCESSING_FEE_MICROS) / 1e6);
  });

  it("failed: every line settles at 0 and the fee is voided", () => {
    const s = run(
      started(),
      { type: "encode_started", attempt: "e1", at },
      { type: "encode_finished", attempt: "e1", at, durationMs: 1, failure: { code: "input_unreachable", message: "gone" } },
    );
    expect(s.job!.status).toBe("failed");
    expect(s.job!.errorCode).toBe("input_unreachable");
    const m = expectLinesSum(s.job!);
    expect(m.totalActualCost).toBe(0);
    expect(m.fees).toEqual([]);
    expect(m.costBreakdown!.lines.find((l) => l.referenceId === "fee_1")!.actualAmountEur).toBe(0);
  });

  it("a probe failure fails the job with nothing charged", () => {
    const s = run(
      {},
      createJob(),
      { type: "probe_started", attempt: "p1", at },
      { type: "probe_failed", attempt: "p1", at, failure: { code: "input_invalid", message: "not media" } },
    );
    expect(s.job!.status).toBe("failed");
    expect(jobMessage(s.job!).totalActualCost).toBe(0);
  });

  it("canceled while queued charges nothing; canceled after pickup charges the fee and finished outputs", () => {
    const queued = run(started(), { type: "cancel", at });
    expect(queued.job!.status).toBe("canceled");
    expect(expectLinesSum(queued.job!).totalActualCost).toBe(0);

    const picked = run(
      started(),
      { type: "encode_started", attempt: "e1", at },
      { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "s3://b/a.mp4", sizeBytes: 10 },
      { type: "cancel", at },
    );
    expect(picked.job!.status).toBe("canceled");
    expect(picked.job!.outputs.map((o) => o.status)).toEqual(["completed", "canceled"]);
    expect(expectLinesSum(picked.job!).totalActualCost).toBe((picked.job!.outputs[0]!.estimateMicros! + PROCESSING_FEE_MICROS) / 1e6);
    expect(() => run(picked, { type: "cancel", at })).toThrow(/already canceled/);
  });

  it("delayed start waits for confirmation, which is valid only then", () => {
    const s = started(true);
    expect(s.job!.status).toBe("awaiting_confirmation");
    expect(jobMessage(s.job!).totalEstimatedCost).toBeGreaterThan(0);
    const confirmed = run(s, { type: "confirm", at: 5000 });
    expect(confirmed.job!.status).toBe("processing");
    expect(confirmed.job!.confirmedAt).toBe(5000);
    expect(() => run(confirmed, { type: "confirm", at })).toThrow(/awaiting_confirmation/);
  });

  it("only the latest attempt's reports count", () => {
    const s = run(started(), { type: "encode_started", attempt: "e1", at }, { type: "encode_started", attempt: "e2", at });
    const stale = run(s, { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "x", sizeBytes: 1 });
    expect(stale.job!.outputs[0]!.status).toBe("processing");
    const progressed = run(s, { type: "output_progress", attempt: "e2", at, outputId: "out_a", progress: 42.7 });
    expect(progressed.job!.outputs[0]!.progress).toBe(42);
    expect(progressed.job!.progress).toBe(21);
    expect(progressed.job!.version).toBe(s.job!.version + 1);
    // The same percent again is no change.
    expect(JobBehavior.decide(progressed, { type: "output_progress", attempt: "e2", at, outputId: "out_a", progress: 42 })).toEqual([]);
  });
});
