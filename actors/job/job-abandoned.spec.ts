// A task the encode queue gave up on (its lease lost on every attempt, actors/scheduler): the job
// fails with encoder_lost, naming how often and where, and is charged as any failure before or
// during an encode.
import { describe, expect, it } from "vitest";
import { at, createJob, decided, encodingJob, probedJob, run } from "./job.fixtures.js";
import { JOB_ERROR_CODES, type JobCommand, type JobState } from "./messages.js";

const abandoned = (task: "probe" | "encode", lostOn = ["n1", "n2", "n1"]): JobCommand => ({ type: "task_abandoned", task, lostOn, at: 4000 });
const job = (s: JobState) => s.job!;

describe("a task abandoned by the encode queue", () => {
  it("a probe: the pending or probing job fails with encoder_lost and is charged nothing", () => {
    for (const s of [run({}, createJob()), run({}, createJob(), { type: "probe_started", attempt: "p1", at })]) {
      const failed = run(s, abandoned("probe"));
      expect(job(failed)).toMatchObject({ status: "failed", errorCode: "encoder_lost", completedAt: 4000 });
      expect(job(failed).errorMessage).toBe("the probe task was lost 3 times, its encoder node (n1, n2) stopping while it ran; it is not tried again");
      expect(job(failed).outputs.map((o) => [o.status, o.actualMicros])).toEqual([
        ["failed", 0],
        ["failed", 0],
      ]);
    }
  });

  it("an encode: its open outputs fail with encoder_lost, finished ones stay, and the job settles partial or failed", () => {
    const s = encodingJob();
    const failed = run(s, abandoned("encode", ["embedded", "embedded", "embedded"]));
    expect(job(failed)).toMatchObject({
      status: "failed",
      errorCode: "encoder_lost",
      errorMessage: "the encode task was lost 3 times, its encoder node (embedded) stopping while it ran; it is not tried again",
    });
    expect(job(failed).outputs.map((o) => [o.status, o.errorCode])).toEqual([
      ["failed", "encoder_lost"],
      ["failed", "encoder_lost"],
    ]);
    const oneDone = run(s, { type: "output_completed", attempt: "e1", at, outputId: "out_a", url: "s3://b/a.mp4", sizeBytes: 10 }, abandoned("encode"));
    expect(job(oneDone)).toMatchObject({ status: "partial", errorCode: "encoder_lost" });
    expect(job(oneDone).outputs.map((o) => o.status)).toEqual(["completed", "failed"]);
  });

  it("changes nothing once the job is past the task's stage (a late or repeated intent)", () => {
    const probed = probedJob();
    expect(decided(probed, abandoned("probe"))).toEqual([]);
    expect(decided(run({}, createJob()), abandoned("encode"))).toEqual([]);
    const done = run(encodingJob(), abandoned("encode"));
    expect(decided(done, abandoned("encode"))).toEqual([]);
    expect(decided(done, abandoned("probe"))).toEqual([]);
  });

  it("encoder_lost is in the closed list of error codes", () => {
    expect(JOB_ERROR_CODES.encoder_lost).toMatch(/lost 3 times/);
  });
});
