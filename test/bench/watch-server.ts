// The server of bench:watch-fanout: `media serve` (embedded, uWS) started in this process, so the
// bench can put jobs in its store and publish their updates on its in-process updates topic, as an
// actor host's relay does, at a set rate, without an encoder. With MEDIA_MODE=cluster, a local
// cluster instead (BENCH_GATEWAYS gateways, one actor host, no encoder; processes of their own): the
// jobs go to Cassandra and the updates to the Kafka updates topic, from this process. The server's
// code comes from BENCH_SERVER_ROOT (this checkout by default), so the same bench measures a
// checkout before a change.
// Spoken to over IPC: "seed" clones a job N times into the store; "publish" sends each job's updates.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const root = path.resolve(process.env.BENCH_SERVER_ROOT ?? path.resolve(import.meta.dirname, "../.."));
const load = <T>(file: string): Promise<T> => import(pathToFileURL(path.join(root, file)).href) as Promise<T>;

interface Bus {
  publish(topic: string, messages: { key: string; value: Uint8Array }[]): Promise<void>;
}
interface Hub {
  bus: Bus;
  topics: { updates: string };
}
interface JobLike {
  id: string;
  version: number;
  status: string;
  progress: number;
  updatedAt: number;
  [k: string]: unknown;
}

type Command = { type: "seed"; template: string; count: number } | { type: "publish"; ids: string[]; seconds: number; perSecond: number } | { type: "stop" };

async function main(): Promise<void> {
  const [{ startServer }, { loadConfig }, { createLogger }, commands, jobMessages] = await Promise.all([
    load<typeof import("../../main/server.js")>("main/server.ts"),
    load<typeof import("../../src/config.js")>("src/config.ts"),
    load<typeof import("../../src/log.js")>("src/log.ts"),
    load<typeof import("../../actors/commands.js")>("actors/commands.ts"),
    load<typeof import("../../actors/job/messages.js")>("actors/job/messages.ts"),
  ]);
  // The gateway's updates hub, caught as it starts: its bus and topics are where updates are published.
  let hub: Hub | undefined;
  const start = commands.UpdatesHub.prototype.start;
  commands.UpdatesHub.prototype.start = function (this: unknown) {
    hub = this as Hub;
    return start.call(this as never);
  };
  const config = loadConfig(process.env);
  const { store, bus, topics, ready, close } = config.mode === "cluster" ? await cluster(config) : await embedded();

  async function embedded() {
    const server = await startServer(config, createLogger(config.logLevel));
    if (!hub) throw new Error("the server started no updates hub");
    const bootstrap = server.bootstrap;
    return { store: server.store, ...hub, ready: { ports: [server.port], pids: [process.pid], bootstrap }, close: () => server.close() };
  }

  async function cluster(c: typeof config) {
    const { launchCluster } = await load<typeof import("../../main/launcher.js")>("main/launcher.ts");
    const { CassandraStore, cassandraConnection } = await load<typeof import("../../src/store/cassandra-store.js")>("src/store/cassandra-store.ts");
    const { KafkaBus } = await load<typeof import("../../src/bus/kafka-bus.js")>("src/bus/kafka-bus.ts");
    const { kafkaConnection } = await load<typeof import("../../src/bus/kafka-security.js")>("src/bus/kafka-security.ts");
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
    const local = await launchCluster({
      gateways: Number(process.env.BENCH_GATEWAYS ?? 2),
      actorHosts: 1,
      basePort: 21000 + Math.floor(Math.random() * 9000),
      env,
    });
    const s = new CassandraStore({
      ...cassandraConnection(c.cluster),
      keyspace: c.cluster.cassandraKeyspace,
      replication: c.cluster.cassandraReplication,
      createSchema: false,
    });
    await s.open();
    const b = new KafkaBus({ ...kafkaConnection(c.cluster), clientId: `bench-watch-${process.pid}`, log: createLogger("warn") });
    await b.start();
    const bootstrap = JSON.parse(readFileSync(path.join(c.dataDir, "bootstrap.json"), "utf8")) as unknown;
    return {
      store: s,
      bus: b,
      topics: commands.topicsFor(c.cluster.topicPrefix),
      ready: { ports: local.gateways.map((g) => g.port!), pids: local.gateways.map((g) => g.child.pid!), bootstrap },
      close: async () => {
        await local.stop();
        await b.close();
        await s.close();
      },
    };
  }
  let template: { record: JobLike; partition: string; sort: string } | undefined;
  const jobs = new Map<string, JobLike>();

  const publish = (job: JobLike) =>
    commands.publishUpdate(bus as never, topics as never, { type: jobMessages.Job.type, id: job.id, version: job.version, state: { job } });

  process.on("message", (m: Command) => {
    void (async () => {
      if (m.type === "seed") {
        const stored = await store.get<JobLike>(jobMessages.JOBS, m.template);
        if (!stored) throw new Error(`no job ${m.template}`);
        template = { record: stored.value, partition: stored.partition, sort: stored.sort };
        const ids: string[] = [];
        for (let i = 0; i < m.count; i += 500) {
          const writes = [];
          for (let j = i; j < Math.min(m.count, i + 500); j++) {
            const id = `job_${randomBytes(10).toString("hex")}`; // never the template: its own updates would interleave
            const { failure: _failure, completedAt: _completedAt, ...rest } = template.record;
            const job: JobLike = { ...rest, id, status: "processing", progress: 0, version: template.record.version };
            jobs.set(id, job);
            ids.push(id);
            // A copy: the embedded store keeps the object it is given, and the bench's own changes must not reach it.
            writes.push({ table: jobMessages.JOBS, id, value: { ...job }, partition: template.partition, sort: `${template.sort}${j}` });
          }
          await store.commit({ writes });
        }
        process.send!({ type: "seeded", ids });
      } else if (m.type === "publish") {
        // Each job's updates evenly through each second (10 ms slices), then, the same way through one
        // more second, each job's terminal update (its last update, at the same rate as the others).
        let publishMs = 0;
        const slices = 100;
        for (let second = 1; second <= m.seconds + 1; second++) {
          const last = second > m.seconds;
          if (last) process.send!({ type: "terminals" }); // the bench reads the gateways' CPU here
          const secondStart = performance.now();
          for (let slice = 0; slice < slices; slice++) {
            const from = Math.floor((slice * m.ids.length) / slices);
            const to = Math.floor(((slice + 1) * m.ids.length) / slices);
            const t0 = performance.now();
            const sends = [];
            for (let k = from; k < to; k++) {
              const job = jobs.get(m.ids[k]!)!;
              if (last) {
                Object.assign(job, { version: job.version + 1, status: "completed", progress: 100, updatedAt: Date.now() });
                sends.push(publish({ ...job }));
                continue;
              }
              for (let n = 0; n < m.perSecond; n++) {
                Object.assign(job, { version: job.version + 1, progress: Math.min(99, job.progress + 1), updatedAt: Date.now() });
                sends.push(publish({ ...job }));
              }
            }
            await Promise.all(sends);
            publishMs += performance.now() - t0;
            const due = secondStart + ((slice + 1) * 1000) / slices;
            const wait = due - performance.now();
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          }
        }
        process.send!({ type: "published", publishMs });
      } else if (m.type === "stop") {
        await close();
        process.exit(0);
      }
    })().catch((e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    });
  });
  process.send!({ type: "ready", ...ready });
}

void main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
