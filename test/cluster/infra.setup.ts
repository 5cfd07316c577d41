// Global setup of the cluster projects: real Kafka and Cassandra for the run, from one of two providers
// chosen by MEDIA_TEST_INFRA:
//   local       infra/kafka.sh and infra/cassandra.sh (Maven Central jars, no Docker): started once
//               for the run unless already running, and stopped afterwards if this run started them.
//   containers  the project's Kafka and Cassandra images of the same versions (deploy/images)
//               through testcontainers (test/cluster/containers.ts); fails at once when no Docker
//               engine answers.
//   auto        (default) containers when a Docker engine answers and those images are built,
//               else local.
// The local peers also offer secured listeners, which the api-cluster project uses
// (test/cluster/secure-peers.ts).
// Either way the endpoints are published in process.env (MEDIA_KAFKA_BROKERS,
// MEDIA_CASSANDRA_CONTACT_POINTS), which the forked test workers and the cluster processes they
// launch inherit; the tests read them through test/cluster/endpoints.ts. MEDIA_TEST_KEEP_INFRA=1
// leaves everything running after the run.
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { publishSecurePeers, secureWanted } from "./secure-peers.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const running = (script: string) => spawnSync("bash", [path.join(ROOT, "infra", script), "status"], { stdio: "ignore" }).status === 0;
const keep = () => process.env.MEDIA_TEST_KEEP_INFRA === "1";

/**
 * Stops the run with one line. (Thrown from a global setup, an error also gets vitest's misleading
 * "No test files found" block; nothing has been started yet when this is called.)
 */
function fail(message: string): never {
  process.stderr.write(`[infra] error: ${message}\n`);
  process.exit(1);
}

/** Runs an infra/ script, its output on stderr; rejects when it fails. */
function script(name: string, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [path.join(ROOT, "infra", name), ...args], { stdio: ["ignore", "inherit", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`infra/${name} ${args.join(" ")} exited ${code}`))));
  });
}

/** Kafka and Cassandra side by side (each takes tens of seconds), without blocking vitest's event loop. */
async function local(): Promise<() => Promise<void>> {
  // The peers offer their secure listeners beside the plain ones (test/cluster/secure-peers.ts).
  const secure = secureWanted();
  if (secure) {
    process.env.KAFKA_SECURE ||= "1";
    process.env.CASSANDRA_SECURE ||= "1";
  }
  const scripts = ["kafka.sh", "cassandra.sh"].filter((s) => !running(s));
  await Promise.all(
    scripts.map(async (s) => {
      const t0 = Date.now();
      await script(s, "up");
      process.stderr.write(`[infra] ${s} up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    }),
  ).catch((e: unknown) => fail(String(e)));
  process.env.MEDIA_TEST_INFRA_PROVIDER = "local";
  process.env.MEDIA_KAFKA_BROKERS = `127.0.0.1:${process.env.KAFKA_PORT || "9092"}`;
  process.env.MEDIA_CASSANDRA_CONTACT_POINTS = `127.0.0.1:${process.env.CASSANDRA_PORT || "9042"}`;
  if (secure) await publishSecurePeers().catch((e: unknown) => fail(e instanceof Error ? e.message : String(e)));
  return async () => {
    if (keep()) return;
    for (const s of scripts) await script(s, "down", "--clean");
  };
}

/**
 * Both cluster projects (api-cluster, cluster) list this setup, and vitest runs it once per project,
 * one after the other, in one process (a module instance each), every setup before the first test
 * and every teardown after the last: the first starts the containers, the others share them, the
 * last teardown stops them.
 */
interface SharedContainers {
  users: number;
  readonly ready: Promise<{ kafka: import("./containers.js").Endpoint; cassandra: import("./containers.js").Endpoint }>;
}
const SHARED = Symbol.for("media.test.infra.containers");
const shared = globalThis as typeof globalThis & { [SHARED]?: SharedContainers };

/** Starts (or finds) the containers once for every cluster project of the run. */
async function containers(client: import("testcontainers").ContainerRuntimeClient): Promise<() => Promise<void>> {
  // testcontainers' reaper is an image of its own, which no registry serves here; this setup's
  // teardown removes what it started (and a crashed run's containers carry the label to find them).
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= "true";
  const { startContainers } = await import("./containers.js");
  return share((shared[SHARED] = { users: 0, ready: startContainers(client, keep()) }));
}

/** Publishes the shared containers' endpoints; the teardown of their last user stops them. */
async function share(state: SharedContainers): Promise<() => Promise<void>> {
  state.users++;
  const { kafka, cassandra } = await state.ready;
  process.env.MEDIA_TEST_INFRA_PROVIDER = "containers";
  process.env.MEDIA_KAFKA_BROKERS = kafka.address;
  process.env.MEDIA_CASSANDRA_CONTACT_POINTS = cassandra.address;
  process.env.MEDIA_TEST_KAFKA_CONTAINER = kafka.containerId;
  return async () => {
    if (--state.users > 0) return;
    delete shared[SHARED];
    if (keep()) {
      const kept = [kafka, cassandra].filter((e) => e.started).map((e) => e.containerId.slice(0, 12));
      if (kept.length > 0) process.stderr.write(`[infra] containers kept (MEDIA_TEST_KEEP_INFRA=1): docker rm -f ${kept.join(" ")}\n`);
      return;
    }
    await Promise.all([kafka.stop(), cassandra.stop()]);
  };
}

export default async function setup(): Promise<() => void | Promise<void>> {
  const choice = (process.env.MEDIA_TEST_INFRA || "auto").trim().toLowerCase();
  if (choice !== "local" && choice !== "containers" && choice !== "auto") {
    fail(`MEDIA_TEST_INFRA must be local, containers or auto, got "${process.env.MEDIA_TEST_INFRA}"`);
  }
  if (choice === "local") return local();
  const started = shared[SHARED];
  if (started) return share(started); // another cluster project's setup started them
  const { dockerEngine, imagesPresent } = await import("./containers.js");
  const engine = await dockerEngine();
  if (engine.ok && (choice === "containers" || (await imagesPresent(engine.client)))) return containers(engine.client);
  if (engine.ok) {
    process.stderr.write("[infra] a Docker engine answers but the peer images are not built (bash deploy/images/build.sh peers): using the infra/ scripts\n");
    return local();
  }
  if (choice === "containers") {
    fail(
      `MEDIA_TEST_INFRA=containers, but no Docker engine answers (testcontainers: ${engine.reason}). ` +
        "Start Docker (or set DOCKER_HOST), or run with MEDIA_TEST_INFRA=local to use the infra/ scripts.",
    );
  }
  process.stderr.write(`[infra] no Docker engine answers (${engine.reason}): using the infra/ scripts\n`);
  return local();
}
