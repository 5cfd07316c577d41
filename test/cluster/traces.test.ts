// One trace per request across the cluster: a JobService/Create followed to its completion is one
// trace, exported by OTLP from the gateway, the actor host and the encoder node to a real OTLP
// receiver (infra/otlp-receiver, the OpenTelemetry project's own Go types), with every parent
// link intact and the encoder's task spans under the gateway's RPC span. One command partition, so
// that the gateway knows its host from the setup's first reply and the Create goes over the direct
// link (actors/direct.ts), which must carry the trace as Kafka's headers do.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../harness.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../otlp-receiver.js";
import { startFleet, type Fleet } from "./fleet.js";

let fleet: Fleet;
let receiver: OtlpReceiver;
let passed = false;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // Short batches, so that the spans arrive while the test waits rather than at the processes' stop.
  fleet = await startFleet({
    encoderNodes: 1,
    inputs: { clip: 2 },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "200", MEDIA_COMMAND_PARTITIONS: "1" },
  });
}, 240_000);

afterAll(async () => {
  await fleet?.stop(passed);
  await receiver?.stop();
}, 120_000);

/** What is wrong with a trace still: a parent not received, a process or a span not there yet. */
function problems(spans: readonly ReceivedSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.span_id, s]));
  const out: string[] = [];
  const roots = spans.filter((s) => s.parent_span_id === "");
  if (roots.length !== 1 || roots[0]!.name !== "media.v1.JobService/Create") out.push(`roots: ${roots.map((r) => r.name).join(", ")}`);
  for (const s of spans) if (s.parent_span_id !== "" && !byId.has(s.parent_span_id)) out.push(`${s.name}: parent ${s.parent_span_id} not in the trace`);
  const roles = new Set(spans.flatMap((s) => String(s.resource["media.roles"]).split(",")));
  for (const role of ["gateway", "actor-host", "encoder-node"]) if (!roles.has(role)) out.push(`no span from a ${role}`);
  for (const name of ["encode_task probe", "encode_task encode"]) if (!spans.some((s) => s.name === name)) out.push(`no ${name} span`);
  return out;
}

/** The span's ancestors, nearest first. */
function ancestors(span: ReceivedSpan, byId: ReadonlyMap<string, ReceivedSpan>): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (let p = byId.get(span.parent_span_id); p; p = byId.get(p.parent_span_id)) out.push(p);
  return out;
}

describe("traces", () => {
  it("a JobService/Create followed to its completion is one trace, from the gateway through Kafka and the actor host to the encoder node", async () => {
    const id = await fleet.submit(fleet.a, fleet.inputs.clip!);
    await until("the job completed", async () => ((await fleet.job(id, fleet.a)).status === "completed" ? true : undefined), 180_000);

    // The trace is the one the Create's gateway span opened (the fleet's setup made no job).
    let last: string[] = [];
    const spans = await until(
      "the job's trace, whole",
      async () => {
        const all = await receiver.spans();
        const create = all.find((s) => s.name === "media.v1.JobService/Create");
        if (!create) return ((last = ["no JobService/Create span"]), undefined);
        const trace = all.filter((s) => s.trace_id === create.trace_id);
        last = problems(trace);
        return last.length === 0 ? trace : undefined;
      },
      30_000,
    ).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}: ${last.join("; ")}`);
    });

    const byId = new Map(spans.map((s) => [s.span_id, s]));
    const root = spans.find((s) => s.parent_span_id === "")!;
    expect(root.kind).toBe("SPAN_KIND_SERVER");
    expect(root.attributes).toMatchObject({ "rpc.system": "connect_rpc", "rpc.service": "media.v1.JobService", "rpc.method": "Create" });
    expect(String(root.attributes["media.request_id"])).toMatch(/^req_/);
    // Three processes at least, each naming itself.
    expect(new Set(spans.map((s) => s.resource["service.instance.id"])).size).toBeGreaterThanOrEqual(3);
    expect(spans.every((s) => s.resource["service.name"] === "media")).toBe(true);

    // The hops in between: the command on Kafka, the job's decision, its task intent, the queue, the lease.
    const names = new Set(spans.map((s) => s.name));
    for (const name of ["job create", "job intent task", "encode_queue enqueue", "encode_queue lease"]) expect(names, [...names].join(", ")).toContain(name);
    const sends = spans.filter((s) => s.kind === "SPAN_KIND_PRODUCER");
    const handled = spans.filter((s) => s.kind === "SPAN_KIND_CONSUMER" && s.attributes["messaging.operation.type"] === "process");
    expect(sends.length).toBeGreaterThan(0);
    expect(handled.every((s) => byId.get(s.parent_span_id)?.kind === "SPAN_KIND_PRODUCER")).toBe(true);
    const decision = spans.find((s) => s.name === "job create")!;
    expect(decision.attributes).toMatchObject({ "media.entity.type": "job", "media.entity.id": id, "media.command": "create" });
    // The Create went over the direct link: the gateway's CLIENT span, the host's SERVER span under
    // it, and the decision under that.
    const served = ancestors(decision, byId)[0]!;
    expect([served.name, served.kind, String(served.resource["media.roles"])]).toEqual(["serve direct command", "SPAN_KIND_SERVER", "actor-host"]);
    const sent = byId.get(served.parent_span_id)!;
    expect([sent.name, sent.kind, String(sent.resource["media.roles"])]).toEqual(["send direct command", "SPAN_KIND_CLIENT", "gateway"]);
    expect(ancestors(sent, byId).at(-1)).toBe(root);

    // Each task of the job descends from the gateway's RPC span, through the queue that held it.
    for (const task of spans.filter((s) => s.name.startsWith("encode_task "))) {
      const up = ancestors(task, byId);
      expect(up.at(-1)).toBe(root);
      expect(up.some((s) => s.name === "job intent task")).toBe(true);
      expect(task.attributes["media.job_id"]).toBe(id);
      expect(String(task.resource["media.roles"])).toBe("encoder-node");
    }
    // The encoder's stages (encoder-node/stage-timing.ts: probe, each ffmpeg, upload...) nest under its task's span.
    const stages = spans.filter((s) => s.name.startsWith("encode."));
    expect(stages.length).toBeGreaterThan(0);
    for (const stage of stages)
      expect(
        ancestors(stage, byId).some((s) => s.name.startsWith("encode_task ")),
        stage.name,
      ).toBe(true);
    passed = true;
  });
});
