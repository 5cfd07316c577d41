// What a job change calls for and writes: its intents (update, task, stop, fan-out, legacy posts),
// its read-model rows, and how each intent is carried out on the bus and the store.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { OutgoingMessage } from "../../src/bus/port.js";
import { QUEUE_ID, QUEUE_TYPE } from "../scheduler/messages.js";
import { MemoryBus } from "../../src/bus/memory-bus.js";
import { topicsFor } from "../../src/bus/topics.js";
import { sortKey } from "../../src/pagination.js";
import { FileStore } from "../../src/store/file-store.js";
import { EVENT_FANOUT, EVENTS, type EventRecord } from "../ledger.js";
import { at, createJob, decided, encodingJob, origin, probedJob, run } from "./job.fixtures.js";
import { jobEffects, jobIntentHandlers, JobBehavior, taskFor, withoutSecrets, type JobIntent } from "./job.js";
import { ACTIVE_JOBS, ACTIVE_PARTITION, JOBS, type JobCommand, type JobRecord, type JobState, type LegacyPost } from "./messages.js";

const job = (s: JobState): JobRecord => {
  if (!s.job) throw new Error("no job");
  return s.job;
};

/** The intents a command calls for, as the host asks for them after folding its events. */
function effectsOf(before: JobState, command: JobCommand): JobIntent[] {
  const events = decided(before, command);
  const after = events.reduce((s, e) => JobBehavior.fold(s, e), before);
  return jobEffects(after, events, command, before);
}

const complete = (outputId: string): JobCommand => ({ type: "output_completed", attempt: "e1", at, outputId, url: `s3://b/${outputId}`, sizeBytes: 1 });
const ledgerOf = (intents: readonly JobIntent[]) => intents.flatMap((i) => (i.kind === "fanout" ? i.events : []));

describe("job effects", () => {
  it("a created job goes to Watch and asks for its probe", () => {
    expect(effectsOf({}, createJob())).toEqual([{ kind: "update" }, { kind: "task", task: "probe" }]);
  });

  it("a probed job asks for its encode, unless it waits for a confirmation, which then asks for it", () => {
    const probing = run({}, createJob(), { type: "probe_started", attempt: "p1", at });
    const probed: JobCommand = { type: "probed", attempt: "p1", at, metadata: job(probedJob()).inputMetadata!, durationMs: 1 };
    expect(effectsOf(probing, probed)).toEqual([{ kind: "update" }, { kind: "task", task: "encode" }]);
    const delayed = run({}, createJob({ delayedStart: true }), { type: "probe_started", attempt: "p1", at });
    expect(effectsOf(delayed, probed)).toEqual([{ kind: "update" }]);
    expect(effectsOf(probedJob({ delayedStart: true }), { type: "confirm", at })).toEqual([{ kind: "update" }, { kind: "task", task: "encode" }]);
    expect(effectsOf(probing, { type: "probe_started", attempt: "p2", at })).toEqual([{ kind: "update" }]);
  });

  it("progress is a legacy post only; a delivered output is a ledger event and a legacy post", () => {
    const s = encodingJob();
    expect(effectsOf(s, { type: "output_progress", attempt: "e1", at: 2500, outputId: "out_a", progress: 10 })).toEqual([
      { kind: "update" },
      { kind: "legacy", posts: [{ event: "job.progress", at: 2500 }] },
    ]);
    const intents = effectsOf(s, complete("out_a"));
    expect(intents.map((i) => i.kind)).toEqual(["update", "fanout", "legacy"]);
    expect(ledgerOf(intents).map((e) => [e.type, e.subject.kind === "job" ? e.subject.outputId : ""])).toEqual([["output.ready", "out_a"]]);
    expect(intents.at(-1)).toEqual({ kind: "legacy", posts: [{ event: "output.completed", outputId: "out_a", at }] });
  });

  it("a cancel stops the encoder and reports the job canceled", () => {
    const intents = effectsOf(encodingJob(), { type: "cancel", at: 2600 });
    expect(intents.map((i) => i.kind)).toEqual(["update", "stop", "fanout", "legacy"]);
    expect(ledgerOf(intents).map((e) => [e.type, e.createdAt])).toEqual([["job.canceled", 2600]]);
    expect(intents.at(-1)).toEqual({ kind: "legacy", posts: [{ event: "job.canceled", at: 2600 }] });
  });

  it("each ledger event freezes the job as it was right after its own event", () => {
    const intents = effectsOf(encodingJob(), { type: "encode_finished", attempt: "e1", at: 3000, durationMs: 1 });
    const ledger = ledgerOf(intents);
    expect(ledger.map((e) => e.type)).toEqual(["output.failed", "output.failed", "job.failed"]);
    const frozen = ledger.map((e) => (e.subject.kind === "job" ? [e.subject.job.status, e.subject.job.outputs.map((o) => o.status)] : []));
    expect(frozen).toEqual([
      ["processing", ["failed", "processing"]],
      ["processing", ["failed", "failed"]],
      ["failed", ["failed", "failed"]],
    ]);
    expect(intents.at(-1)).toEqual({
      kind: "legacy",
      posts: [
        { event: "output.failed", outputId: "out_a", at: 3000 },
        { event: "output.failed", outputId: "out_b", at: 3000 },
        { event: "job.failed", at: 3000 },
      ],
    });
  });

  it("legacy posts name completed jobs job.completed and partial ones job.failed", () => {
    const s = run(encodingJob(), complete("out_a"));
    const finish: JobCommand = { type: "encode_finished", attempt: "e1", at: 3000, durationMs: 1 };
    const last = (intents: JobIntent[]) => intents.flatMap((i) => (i.kind === "legacy" ? i.posts : [])).at(-1);
    expect(last(effectsOf(run(s, complete("out_b")), finish))).toEqual({ event: "job.completed", at: 3000 });
    expect(ledgerOf(effectsOf(run(s, complete("out_b")), finish)).map((e) => e.type)).toEqual(["job.succeeded"]);
    const partial = run(s, { type: "output_failed", attempt: "e1", at, outputId: "out_b", failure: { code: "internal", message: "x" } });
    expect(last(effectsOf(partial, finish))).toEqual({ event: "job.failed", at: 3000 });
    expect(ledgerOf(effectsOf(partial, finish)).map((e) => e.type)).toEqual(["job.partial"]);
  });

  it("no change calls for nothing; a resume asks only for the task the job waits on", () => {
    const s = encodingJob();
    expect(effectsOf(s, { type: "output_progress", attempt: "old", at, outputId: "out_a", progress: 10 })).toEqual([]);
    expect(jobEffects({}, [], { type: "resume" }, {})).toEqual([]);
    const resume: JobCommand = { type: "resume" };
    expect(effectsOf(run({}, createJob()), resume)).toEqual([{ kind: "task", task: "probe" }]);
    expect(effectsOf(run({}, createJob(), { type: "probe_started", attempt: "p1", at }), resume)).toEqual([{ kind: "task", task: "probe" }]);
    expect(effectsOf(s, resume)).toEqual([{ kind: "task", task: "encode" }]);
    expect(effectsOf(probedJob({ delayedStart: true }), resume)).toEqual([]);
    expect(effectsOf(run(s, { type: "cancel", at }), resume)).toEqual([]);
  });

  it("taskFor: probe on create, encode once processing after a probe or a confirmation, nothing else", () => {
    const processing = job(encodingJob());
    expect(taskFor(processing, [{ type: "encode_started", attempt: "e2", at }])).toBeUndefined();
    expect(taskFor(processing, [{ type: "confirmed", at }])).toBe("encode");
    expect(taskFor({ ...processing, status: "awaiting_confirmation" }, [{ type: "confirmed", at }])).toBeUndefined();
    expect(taskFor({ ...processing, status: "completed" }, "resumed")).toBeUndefined();
    // Any event of the change counts, wherever it comes in the list.
    expect(
      taskFor({ ...processing, status: "pending" }, [
        { type: "created", job: processing },
        { type: "probe_started", attempt: "p1", at },
      ]),
    ).toBe("probe");
    expect(
      taskFor(processing, [
        { type: "thumbnails_done", at, results: [] },
        { type: "confirmed", at },
      ]),
    ).toBe("encode");
  });
});

describe("job read models", () => {
  it("keep their table names: stored jobs are found by them", () => {
    expect([JOBS, ACTIVE_JOBS, ACTIVE_PARTITION, JobBehavior.type]).toEqual(["jobs", "active_jobs", "all", "job"]);
  });

  it("repair writes the job row and its active-jobs row, or deletes that row once the job ended", () => {
    const s = encodingJob();
    const sort = sortKey(1000, "job_1");
    expect(JobBehavior.repair(s)).toEqual([
      { table: JOBS, id: "job_1", value: job(s), partition: "app_1", sort },
      { table: ACTIVE_JOBS, id: "job_1", value: { jobId: "job_1" }, partition: ACTIVE_PARTITION, sort },
    ]);
    const ended = run(s, { type: "cancel", at });
    expect(JobBehavior.repair(ended)[1]).toEqual({ table: ACTIVE_JOBS, id: "job_1", value: null });
    expect(JobBehavior.repair({})).toEqual([]);
  });

  it("touches the active-jobs row only when the job starts or ends, and writes ledger rows with the event", () => {
    const created = run({}, createJob());
    expect(JobBehavior.readModel(created, { type: "created", job: job(created) }).map((w) => w.table)).toEqual([JOBS, ACTIVE_JOBS]);
    const s = encodingJob();
    expect(JobBehavior.readModel(s, { type: "encode_started", attempt: "e1", at }).map((w) => w.table)).toEqual([JOBS]);
    const delivered = run(s, complete("out_a"));
    expect(JobBehavior.readModel(delivered, { type: "output_completed", at, outputId: "out_a", url: "u", sizeBytes: 1 }).map((w) => w.table)).toEqual([
      JOBS,
      EVENTS,
      EVENT_FANOUT,
    ]);
    const ended = run(s, { type: "cancel", at });
    expect(JobBehavior.readModel(ended, { type: "settled", at, status: "canceled" }).map((w) => [w.table, w.value === null])).toEqual([
      [JOBS, false],
      [ACTIVE_JOBS, true],
      [EVENTS, false],
      [EVENT_FANOUT, false],
    ]);
  });
});

describe("withoutSecrets", () => {
  it("blanks the sealed credentials of each origin the job has and adds none", () => {
    const s = run({}, createJob({ inputOrigin: origin({ id: "in" }), outputOrigin: origin({ id: "out" }) }));
    const bare = withoutSecrets(job(s));
    expect(bare.inputOrigin).toEqual(origin({ id: "in", sealedCredentials: "" }));
    expect(bare.outputOrigin).toEqual(origin({ id: "out", sealedCredentials: "" }));
    expect("inputUrlOrigin" in bare).toBe(false);
    expect(withoutSecrets(job(run({}, createJob({ inputUrlOrigin: origin() })))).inputUrlOrigin?.sealedCredentials).toBe("");
    expect(withoutSecrets(job(run({}, createJob())))).toEqual(job(run({}, createJob())));
  });
});

/** A bus that keeps what is published instead of delivering it. */
class RecordingBus extends MemoryBus {
  readonly sent: { topic: string; key: string; value: unknown }[] = [];
  override async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    for (const m of messages) this.sent.push({ topic, key: m.key, value: JSON.parse(new TextDecoder().decode(m.value)) });
  }
}

describe("job intents carried out", () => {
  const topics = topicsFor("t");
  async function setup() {
    const bus = new RecordingBus();
    const store = new FileStore(mkdtempSync(path.join(tmpdir(), "job-intents-")));
    await store.open();
    const legacy: [string, number, readonly LegacyPost[]][] = [];
    const handlers = jobIntentHandlers({
      bus,
      topics,
      store,
      legacy: async (j, seq, posts) => void legacy.push([j.id, seq, posts]),
      retentionDayMs: 86_400_000,
    });
    return { bus, store, legacy, handlers };
  }
  const s = run({}, createJob({ outputOrigin: origin() }));
  const ctx = (state: JobState, recovered = false) => ({ type: "job", id: "job_1", state, seq: 7, recovered });

  it("update publishes the job without secrets, keyed by entity, with its version", async () => {
    const { bus, handlers } = await setup();
    await handlers.update({ kind: "update" }, ctx(s));
    await handlers.update({ kind: "update" }, ctx({}));
    expect(bus.sent).toEqual([
      {
        topic: topics.updates,
        key: "job:job_1",
        value: JSON.parse(JSON.stringify({ type: "job", id: "job_1", version: 1, state: { job: withoutSecrets(job(s)) } })),
      },
    ]);
  });

  it("a task joins the encode queue with the job's app, priority and age; a stop reaches the encoders and takes the job out of the queue", async () => {
    const { bus, handlers } = await setup();
    const j = job(s);
    await handlers.task({ kind: "task", task: "encode" }, ctx(s));
    await handlers.task({ kind: "task", task: "probe" }, ctx({}));
    await handlers.stop({ kind: "stop" }, ctx(s));
    const queue = `${QUEUE_TYPE}:${QUEUE_ID}`;
    expect(bus.sent).toEqual([
      {
        topic: topics.commands,
        key: queue,
        value: {
          type: QUEUE_TYPE,
          id: QUEUE_ID,
          command: {
            type: "enqueue",
            task: { kind: "encode", jobId: "job_1", appId: j.appId, priority: j.priority, order: j.createdAt },
            at: expect.any(Number),
          },
        },
      },
      { topic: topics.signals, key: "job_1", value: { jobId: "job_1", signal: "stop" } },
      { topic: topics.commands, key: queue, value: { type: QUEUE_TYPE, id: QUEUE_ID, command: { type: "cancel", jobId: "job_1", at: expect.any(Number) } } },
    ]);
  });

  it("fan-out clears the event's mark, and writes its ledger rows again only when recovered", async () => {
    const ledger: EventRecord[] = ledgerOf(effectsOf(encodingJob(), { type: "cancel", at }));
    const { store, handlers } = await setup();
    await store.commit({ writes: [{ table: EVENT_FANOUT, id: ledger[0]!.id, value: {} }] });
    await handlers.fanout({ kind: "fanout", events: ledger }, ctx(s));
    expect(await store.get(EVENTS, ledger[0]!.id)).toBeUndefined();
    expect(await store.get(EVENT_FANOUT, ledger[0]!.id)).toBeUndefined();
    await handlers.fanout({ kind: "fanout", events: ledger }, ctx(s, true));
    expect((await store.get(EVENTS, ledger[0]!.id))?.value).toMatchObject({ id: ledger[0]!.id, type: "job.canceled" });
    expect(await store.get(EVENT_FANOUT, ledger[0]!.id)).toBeUndefined();
  });

  it("legacy posts go to the legacy webhook with the entry's seq, for a job that exists", async () => {
    const { legacy, handlers } = await setup();
    const posts = [{ event: "job.progress", at }] as const;
    await handlers.legacy({ kind: "legacy", posts }, ctx(s));
    await handlers.legacy({ kind: "legacy", posts }, ctx({}));
    expect(legacy).toEqual([["job_1", 7, posts]]);
  });
});
