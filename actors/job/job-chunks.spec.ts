// The job's side of a ladder split into chunks, at its edges: which plans and which chunk reports
// it takes (the output, the attempt, the part), the spans it refuses, and the intents that follow.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { at, decided, encodingJob, output, rejected, run } from "./job.fixtures.js";
import { JobBehavior, jobEffects } from "./job.js";
import type { JobCommand, JobCommandOf, JobEvent, JobState } from "./messages.js";

const spans = [{ start: 0, end: 60 }, { start: 60, end: 120 }, { start: 120 }];
const planned = (over: Partial<JobCommandOf<"chunks_planned">> = {}): JobCommand => ({
  type: "chunks_planned",
  attempt: "e1",
  at,
  outputId: "out_a",
  spans,
  ...over,
});
const failed = (part: number, outputId = "out_a"): JobCommand => ({
  type: "chunk_failed",
  at,
  outputId,
  part,
  failure: { code: "encode_failed", message: "ffmpeg failed" },
});
const done = (part: number, outputId = "out_a"): JobCommand => ({ type: "chunk_done", at, outputId, part, node: "n1", renditions: [] });

describe("a split ladder at its edges", () => {
  it("only the current attempt plans, for an output of the job still encoding, while the job processes", () => {
    const job = encodingJob();
    const other = [{ start: 0, end: 30 }, { start: 30 }];
    expect(decided(job, planned({ outputId: "out_x" }))).toEqual([]);
    expect(decided(job, planned({ attempt: "e0" }))).toEqual([]);
    expect(decided(run(job, planned()), planned({ attempt: "e0", spans: other }))).toEqual([]);
    expect(decided(run(job, { type: "cancel", at }), planned())).toEqual([]);
    const completedA = run(job, { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "s3://b/a", sizeBytes: 1 });
    expect(decided(completedA, planned())).toEqual([]);
    // The other output, still encoding, can be split.
    expect(decided(completedA, planned({ outputId: "out_b" }))).toHaveLength(1);
    expect(rejected(job, planned({ spans: [{ start: 0 }] })).message).toMatch(/follow one another from 0/);
  });

  it("refuses empty, endless and backward chunks", () => {
    const job = encodingJob();
    for (const bad of [
      [{ start: 0, end: 0 }, { start: 0 }],
      [{ start: 0, end: Infinity }, { start: Infinity }],
      [{ start: 0, end: 60 }, { start: 60, end: 30 }, { start: 30 }],
    ])
      expect(rejected(job, planned({ spans: bad })).code).toBe(Code.InvalidArgument);
  });

  it("a chunk report counts for a part of the plan, of the output planned, while it encodes", () => {
    const job = encodingJob();
    const completedA = run(job, { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "s3://b/a", sizeBytes: 1 });
    // The output looked up by its id: out_b is split while out_a is done.
    const splitB = run(completedA, planned({ outputId: "out_b" }));
    expect(decided(splitB, done(0, "out_b"))).toHaveLength(1);
    expect(decided(splitB, failed(1, "out_b"))).toEqual([
      { type: "output_failed", at, outputId: "out_b", failure: { code: "encode_failed", message: "ffmpeg failed" } },
    ]);
    const split = run(job, planned());
    for (const part of [-1, 3, 1.5]) expect(decided(split, failed(part))).toEqual([]);
    expect(decided(split, failed(2))).toHaveLength(1);
    expect(decided(run(split, { type: "cancel", at }), failed(0))).toEqual([]);
  });

  it("no chunk is queued for an ended job; a plan among other events still queues its chunks", () => {
    const split = run(encodingJob(), planned());
    const canceled = run(split, { type: "cancel", at });
    expect(jobEffects(canceled, [], { type: "resume" }, canceled)).toEqual([]);
    const before: JobState = encodingJob();
    const events: JobEvent[] = [
      { type: "output_progress", at, outputId: "out_b", progress: 5 },
      { type: "chunks_planned", at, outputId: "out_a", spans },
    ];
    const after = events.reduce(JobBehavior.fold, before);
    expect(jobEffects(after, events, planned(), before)).toContainEqual({ kind: "chunk_tasks", parts: [0, 1, 2] });
  });

  it("a managed job's end, among other events, is told to its video", () => {
    const managed = { videoId: "vid_1" };
    const job = encodingJob({ managed, outputs: [output("out_a", "720p"), output("out_b", "480p")] });
    const finish: JobCommand = { type: "encode_finished", attempt: "e1", at, durationMs: 5 };
    const events = decided(job, finish);
    expect(events.map((e) => e.type)).toEqual(["output_failed", "output_failed", "settled"]);
    const intents = jobEffects(events.reduce(JobBehavior.fold, job), events, finish, job).map((i) => i.kind);
    expect(intents).toContain("video");
  });
});
