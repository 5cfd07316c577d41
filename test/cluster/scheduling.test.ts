// Scheduling by priority and fair sharing across apps, on real Kafka and Cassandra with one
// encoder node (one task slot): a premium job of one app starts within one task slot of a backlog
// of another app's economy jobs, and two apps with equal backlogs progress at equal rates. Each
// process's /metrics, scraped and parsed, moves as the jobs run: the queue's depth by priority,
// the encoder's tasks and busy time, the actor host's job durations.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../harness.js";
import { count, scrapeMetrics, value, type Scrape } from "../prometheus.js";
import { ms, startFleet, type Fleet } from "./fleet.js";

let fleet: Fleet;
let passed = false;

beforeAll(async () => {
  fleet = await startFleet({ encoderNodes: 1, inputs: { short: 2, long: 8 } });
}, 240_000);

afterAll(async () => {
  await fleet?.stop(passed);
}, 120_000);

const metricsOf = (role: "gateway" | "actor-host" | "encoder-node"): Promise<Scrape> => {
  const p = [...fleet.cluster.gateways, ...fleet.cluster.actorHosts, ...fleet.cluster.encoderNodes].find((x) => x.role === role)!;
  return scrapeMetrics(`http://127.0.0.1:${p.metricsPort}/metrics`);
};

const ENDED = new Set(["completed", "partial", "failed", "canceled"]);

async function ended(ids: readonly string[], who: Fleet["a"]): Promise<any[]> {
  return until(
    `${ids.length} jobs ended`,
    async () => {
      const jobs = await Promise.all(ids.map((id) => fleet.job(id, who)));
      return jobs.every((j) => ENDED.has(j.status)) ? jobs : undefined;
    },
    240_000,
  );
}

describe("scheduling by priority and app", () => {
  it("a premium job of another app starts within one task slot of an economy backlog", async () => {
    const start = { node: await metricsOf("encoder-node"), host: await metricsOf("actor-host") };
    const backlog: string[] = [];
    for (let i = 0; i < 4; i++) backlog.push(await fleet.submit(fleet.a, fleet.inputs.short!, "economy"));
    // The queue's depth, as every process reports it from the queue's record, shows the backlog.
    const depth = await until("the economy backlog in the queue's depth", async () => {
      const d = value(await metricsOf("gateway"), "media_encode_queue_depth", { priority: "economy" });
      return d >= 2 ? d : undefined;
    });
    expect(depth).toBeLessThanOrEqual(4);
    // The node is busy with the backlog's first task when the premium job arrives.
    await until("the backlog started", async () => ((await fleet.job(backlog[0]!, fleet.a)).status !== "pending" ? true : undefined), 60_000);
    const premium = await fleet.submit(fleet.b, fleet.inputs.short!, "premium");
    const [p] = await ended([premium], fleet.b);
    const economy = await ended(backlog, fleet.a);
    expect(p.status).toBe("completed");
    for (const j of economy) expect(j.status).toBe("completed");
    // At most the job whose task was running when the premium job came finished before it.
    const before = economy.filter((j) => ms(j.completed_at) < ms(p.completed_at));
    expect(before.length, economy.map((j) => `${j.id} ${j.completed_at}`).join(", ") + ` premium ${p.completed_at}`).toBeLessThanOrEqual(1);
    // Its encode started before the backlog's second job had even been probed.
    expect(ms(p.started_at)).toBeLessThan(ms(economy[1]!.probed_at));

    const after = { node: await metricsOf("encoder-node"), host: await metricsOf("actor-host"), gateway: await metricsOf("gateway") };
    const tasks = (s: Scrape, kind: string, priority: string) => value(s, "media_encode_tasks_total", { kind, priority, class: "small" });
    expect(tasks(after.node, "encode", "economy") - tasks(start.node, "encode", "economy")).toBe(4);
    expect(tasks(after.node, "probe", "premium") - tasks(start.node, "probe", "premium")).toBe(1);
    expect(value(after.node, "media_encoder_busy_seconds_total", { class: "small" })).toBeGreaterThan(
      value(start.node, "media_encoder_busy_seconds_total", { class: "small" }),
    );
    expect(
      count(after.host, "media_job_duration_seconds", { outcome: "completed" }) - count(start.host, "media_job_duration_seconds", { outcome: "completed" }),
    ).toBe(5);
    expect(value(after.gateway, "media_encode_queue_depth", { priority: "economy" })).toBe(0);
    expect(value(after.gateway, "media_encoder_nodes", { class: "small" })).toBe(1);
    // The node's leases and reports went straight to the actor host once Kafka's replies named it
    // (actors/direct.ts): five jobs' probes, encodes and leases, a few by Kafka, none lost.
    const direct = (s: Scrape, outcome: string) => value(s, "media_direct_commands_total", { outcome });
    expect(direct(after.node, "answered") - direct(start.node, "answered")).toBeGreaterThan(20);
    expect(direct(after.node, "lost") - direct(start.node, "lost")).toBe(0);
  });

  it("two apps with equal backlogs progress at equal rates, though one app queued all of its jobs first", async () => {
    // A long job holds the node while both backlogs are queued, so neither gets a head start.
    const blocker = await fleet.submit(fleet.b, fleet.inputs.long!, "premium");
    await until("the blocker encoding", async () => ((await fleet.job(blocker, fleet.b)).status === "processing" ? true : undefined), 60_000);
    const a: string[] = [];
    const b: string[] = [];
    for (let i = 0; i < 5; i++) a.push(await fleet.submit(fleet.a, fleet.inputs.short!));
    for (let i = 0; i < 5; i++) b.push(await fleet.submit(fleet.b, fleet.inputs.short!));
    const jobs = [...(await ended(a, fleet.a)).map((j) => ({ app: "a", j })), ...(await ended(b, fleet.b)).map((j) => ({ app: "b", j }))];
    for (const { j } of jobs) expect(j.status).toBe("completed");
    // Progress over the time the first 8 of the 10 took: each app's share of those completions.
    const first = jobs.sort((x, y) => ms(x.j.completed_at) - ms(y.j.completed_at)).slice(0, 8);
    const ofA = first.filter((x) => x.app === "a").length;
    const ofB = first.length - ofA;
    const order = jobs.map((x) => x.app).join("");
    console.log(`completion order by app: ${order}`);
    expect(Math.min(ofA, ofB) / Math.max(ofA, ofB), order).toBeGreaterThanOrEqual(0.8);
    passed = true;
  });
});
