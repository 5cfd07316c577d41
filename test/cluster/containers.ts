// The containers provider of the cluster tests: the same Kafka 3.9.2 (KRaft, broker and controller
// in one JVM) and Cassandra 5.0.9 that infra/ runs from Maven Central jars, here from their official
// images through testcontainers, for machines with a Docker engine. Loaded only when one is used
// (test/cluster/infra.setup.ts, test/cluster/kafka-service.ts), so the local path never needs it.
//
// Kafka listens on a host port chosen before the container is created and bound to the same port,
// so its advertised listener is right from the first start and stays right across a stop/start of
// the container (bad-config.test.ts stops Kafka and starts it again). Cassandra gets a random port.
// Both are ready when the log says so and a real client round trip from this machine succeeds: a
// Kafka admin request, a CQL OPTIONS → SUPPORTED exchange (test/cluster/probes.ts).
import net from "node:net";
import type { Readable } from "node:stream";
import {
  GenericContainer,
  ImageName,
  Wait,
  getContainerRuntimeClient,
  type BoundPorts,
  type ContainerRuntimeClient,
  type StartedTestContainer,
  type WaitStrategy,
} from "testcontainers";
import { cqlAnswers, kafkaAnswers, until } from "./probes.js";

/**
 * The project's own images of the versions infra/kafka.sh and infra/cassandra.sh run, built from
 * the same jars by deploy/images/build.sh (no registry serves images here). Their entrypoints take
 * the environment the official apache/kafka and cassandra images take, so those work too where a
 * registry does (MEDIA_TEST_KAFKA_IMAGE=apache/kafka:3.9.2, MEDIA_TEST_CASSANDRA_IMAGE=cassandra:5.0.9).
 */
export const KAFKA_IMAGE = process.env.MEDIA_TEST_KAFKA_IMAGE || "media-kafka:3.9.2";
export const CASSANDRA_IMAGE = process.env.MEDIA_TEST_CASSANDRA_IMAGE || "media-cassandra:5.0.9";

/** The images are here (built, or pulled earlier): the `auto` choice of the global setup uses containers only then. */
export async function imagesPresent(client: ContainerRuntimeClient): Promise<boolean> {
  const present = await Promise.all([KAFKA_IMAGE, CASSANDRA_IMAGE].map((i) => client.image.exists(ImageName.fromString(i))));
  return present.every(Boolean);
}

const KAFKA_START_TIMEOUT_MS = 180_000;
const CASSANDRA_START_TIMEOUT_MS = 300_000;
/** Labels that find a container this setup started, and a kept one on the next run. */
const SERVICE_LABEL = "media.test.infra";
const IMAGE_LABEL = "media.test.infra.image";
const KAFKA_ADDRESS_LABEL = "media.test.infra.kafka-address";

export interface Endpoint {
  readonly service: "kafka" | "cassandra";
  /** host:port as seen from this machine. */
  readonly address: string;
  readonly containerId: string;
  readonly image: string;
  /** Started by this run (false: a running container kept by an earlier run was found). */
  readonly started: boolean;
  /** Stops and removes the container; a no-op for one this run did not start. */
  stop(): Promise<void>;
}

/** A working container runtime (testcontainers' own detection: DOCKER_HOST, ~/.testcontainers.properties, the socket), or why not. */
export async function dockerEngine(timeoutMs = 10_000): Promise<{ ok: true; client: ContainerRuntimeClient } | { ok: false; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    timer.unref();
  });
  try {
    return { ok: true, client: await Promise.race([getContainerRuntimeClient(), timeout]) };
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
  }
}

/** The address the tests use for the Docker host: testcontainers' host, with localhost as 127.0.0.1 like infra/. */
function dockerHost(client: ContainerRuntimeClient): string {
  const host = client.info.containerRuntime.host;
  return host === "localhost" ? "127.0.0.1" : host;
}

/** A port nobody listens on here now (the Kafka container binds it on the Docker host). */
function freeHostPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Waits until `probe` answers from this machine; fails at once if the container exits meanwhile. */
export class ProbeWait implements WaitStrategy {
  private timeoutMs = 120_000;
  private timeoutSet = false;
  constructor(
    private readonly what: string,
    private readonly probe: (ports: BoundPorts) => Promise<boolean>,
  ) {}

  async waitUntilReady(container: { inspect(): Promise<{ State: { Running: boolean; ExitCode: number } }> }, boundPorts: BoundPorts): Promise<void> {
    let exited: number | undefined;
    const ready = await until(async () => {
      const { State } = await container.inspect();
      if (!State.Running) {
        exited = State.ExitCode;
        return true;
      }
      return this.probe(boundPorts);
    }, this.timeoutMs);
    if (exited !== undefined) throw new Error(`${this.what}: the container exited during start (exit code ${exited})`);
    if (!ready) throw new Error(`${this.what}: not ready after ${this.timeoutMs / 1000} s`);
  }
  withStartupTimeout(ms: number): this {
    this.timeoutMs = ms;
    this.timeoutSet = true;
    return this;
  }
  isStartupTimeoutSet(): boolean {
    return this.timeoutSet;
  }
  getStartupTimeout(): number {
    return this.timeoutMs;
  }
}

/** Keeps the last lines a container printed, to show when its start fails (as infra/ shows the log tail). */
function logTail(lines = 40): { consumer: (stream: Readable) => void; text: () => string } {
  const kept: string[] = [];
  return {
    consumer: (stream) =>
      stream.on("data", (d: Buffer | string) => {
        kept.push(
          ...d
            .toString()
            .split("\n")
            .filter((l) => l.trim() !== ""),
        );
        if (kept.length > lines) kept.splice(0, kept.length - lines);
      }),
    text: () => kept.join("\n"),
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const say = (line: string) => process.stderr.write(`[infra] ${line}\n`);

/** A running container of this service and image that an earlier run kept (MEDIA_TEST_KEEP_INFRA=1). */
async function findKept(client: ContainerRuntimeClient, service: Endpoint["service"], image: string): Promise<Endpoint | undefined> {
  const found = (await client.container.list()).find(
    (c) => c.Labels?.[SERVICE_LABEL] === service && c.Labels?.[IMAGE_LABEL] === image && c.State === "running",
  );
  if (!found) return undefined;
  let address: string | undefined;
  if (service === "kafka") address = found.Labels[KAFKA_ADDRESS_LABEL];
  else {
    const port = found.Ports.find((p) => p.PrivatePort === 9042 && p.PublicPort)?.PublicPort;
    if (port) address = `${dockerHost(client)}:${port}`;
  }
  if (!address) return undefined;
  return { service, address, containerId: found.Id, image, started: false, stop: async () => undefined };
}

async function pull(client: ContainerRuntimeClient, image: string): Promise<void> {
  if (await client.image.exists(ImageName.fromString(image))) return;
  if (image.startsWith("media-")) throw new Error(`${image} is not built: bash deploy/engine.sh up && bash deploy/images/build.sh peers`);
  const t0 = Date.now();
  await client.image.pull(ImageName.fromString(image));
  say(`${image} pulled (or found) in ${seconds(Date.now() - t0)}`);
}

function started(service: Endpoint["service"], address: string, image: string, container: StartedTestContainer): Endpoint {
  return { service, address, containerId: container.getId(), image, started: true, stop: async () => void (await container.stop()) }; // removed anyway: no graceful stop
}

/** Single-node KRaft Kafka with the broker settings of infra/kafka.sh, advertised at `address` (host:port), bound to that port. */
export function kafkaContainer(address: string, keep: boolean, logConsumer?: (stream: Readable) => void): GenericContainer {
  const port = Number(address.slice(address.lastIndexOf(":") + 1));
  const container = new GenericContainer(KAFKA_IMAGE)
    .withExposedPorts({ container: 9092, host: port })
    .withEnvironment({
      CLUSTER_ID: "bWVkaWEtdGVzdC1rYWZrYQ", // base64url of the 16 bytes "media-test-kafka"
      KAFKA_NODE_ID: "1",
      KAFKA_PROCESS_ROLES: "broker,controller",
      KAFKA_CONTROLLER_QUORUM_VOTERS: "1@localhost:29093",
      KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
      // PLAINTEXT is the tests' listener; BROKER, inside the container, is the broker's own.
      KAFKA_LISTENERS: "PLAINTEXT://0.0.0.0:9092,BROKER://localhost:29092,CONTROLLER://localhost:29093",
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${address},BROKER://localhost:29092`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
      KAFKA_INTER_BROKER_LISTENER_NAME: "BROKER",
      KAFKA_NUM_PARTITIONS: "1",
      KAFKA_DEFAULT_REPLICATION_FACTOR: "1",
      KAFKA_MIN_INSYNC_REPLICAS: "1",
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: "10",
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: "false",
      KAFKA_DELETE_TOPIC_ENABLE: "true",
    })
    .withLabels({ [SERVICE_LABEL]: "kafka", [IMAGE_LABEL]: KAFKA_IMAGE, [KAFKA_ADDRESS_LABEL]: address })
    .withWaitStrategy(Wait.forAll([Wait.forLogMessage(/Kafka Server started/), new ProbeWait("kafka", () => kafkaAnswers([address]))]))
    .withStartupTimeout(KAFKA_START_TIMEOUT_MS)
    .withAutoCleanup(!keep);
  return logConsumer ? container.withLogConsumer(logConsumer) : container;
}

async function startKafka(client: ContainerRuntimeClient, keep: boolean): Promise<Endpoint> {
  const host = dockerHost(client);
  for (let attempt = 1; ; attempt++) {
    const address = `${host}:${await freeHostPort()}`;
    const tail = logTail();
    const t0 = Date.now();
    try {
      const c = await kafkaContainer(address, keep, tail.consumer).start();
      say(`kafka container ready in ${seconds(Date.now() - t0)}: bootstrap ${address} (${KAFKA_IMAGE}, ${c.getId().slice(0, 12)})`);
      return started("kafka", address, KAFKA_IMAGE, c);
    } catch (e) {
      // Another process took the port between the check and the bind: pick another one.
      if (attempt < 3 && /port is already allocated|address already in use/i.test(String(e))) continue;
      throw new Error(
        `kafka container (${KAFKA_IMAGE}) did not start: ${e instanceof Error ? e.message : String(e)}${tail.text() ? `\nlast lines of its log:\n${tail.text()}` : ""}`,
      );
    }
  }
}

/**
 * Single-node Cassandra like infra/cassandra.sh: data centre datacenter1 (SimpleSnitch, the image's
 * default), one token, 1 GB heap, the same fast-start properties, auto snapshots off and
 * storage_compatibility_mode NONE (a fresh 5.0 node). Ready when CQL answers at `host` on the mapped port.
 */
export function cassandraContainer(host: string, keep: boolean, logConsumer?: (stream: Readable) => void): GenericContainer {
  const container = new GenericContainer(CASSANDRA_IMAGE)
    .withExposedPorts(9042)
    .withEnvironment({
      CASSANDRA_CLUSTER_NAME: "media-dev",
      CASSANDRA_NUM_TOKENS: "1",
      MAX_HEAP_SIZE: "1G",
      HEAP_NEWSIZE: "256M",
      JVM_EXTRA_OPTS: [
        "-Dcassandra.initial_token=0",
        "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        "-Dcassandra.ring_delay_ms=100",
        "-Dcassandra.superuser_setup_delay_ms=0",
        "-Dcassandra.shutdown_announce_in_ms=0",
      ].join(" "),
    })
    // The image's own entry point, after two edits of its cassandra.yaml that it has no variable for.
    .withEntrypoint([
      "bash",
      "-c",
      'sed -ri "s/^auto_snapshot:.*/auto_snapshot: false/; s/^storage_compatibility_mode:.*/storage_compatibility_mode: NONE/" "${CASSANDRA_CONF:-/etc/cassandra}/cassandra.yaml" && exec docker-entrypoint.sh cassandra -f',
    ])
    .withLabels({ [SERVICE_LABEL]: "cassandra", [IMAGE_LABEL]: CASSANDRA_IMAGE })
    .withWaitStrategy(
      Wait.forAll([Wait.forLogMessage(/Starting listening for CQL clients/), new ProbeWait("cassandra", (ports) => cqlAnswers(host, ports.getBinding(9042)))]),
    )
    .withStartupTimeout(CASSANDRA_START_TIMEOUT_MS)
    .withAutoCleanup(!keep);
  return logConsumer ? container.withLogConsumer(logConsumer) : container;
}

async function startCassandra(client: ContainerRuntimeClient, keep: boolean): Promise<Endpoint> {
  const host = dockerHost(client);
  const tail = logTail();
  const t0 = Date.now();
  try {
    const c = await cassandraContainer(host, keep, tail.consumer).start();
    const address = `${host}:${c.getMappedPort(9042)}`;
    say(`cassandra container ready in ${seconds(Date.now() - t0)}: CQL ${address} (${CASSANDRA_IMAGE}, ${c.getId().slice(0, 12)})`);
    return started("cassandra", address, CASSANDRA_IMAGE, c);
  } catch (e) {
    throw new Error(
      `cassandra container (${CASSANDRA_IMAGE}) did not start: ${e instanceof Error ? e.message : String(e)}${tail.text() ? `\nlast lines of its log:\n${tail.text()}` : ""}`,
    );
  }
}

/**
 * Kafka and Cassandra in containers: a running one kept by an earlier run (MEDIA_TEST_KEEP_INFRA=1)
 * is used as it is, otherwise one is started (both at once). With `keep`, the new containers are
 * not handed to testcontainers' reaper, so they outlive this process.
 */
export async function startContainers(client: ContainerRuntimeClient, keep: boolean): Promise<{ kafka: Endpoint; cassandra: Endpoint }> {
  const one = async (service: Endpoint["service"], image: string, start: () => Promise<Endpoint>): Promise<Endpoint> => {
    const kept = await findKept(client, service, image);
    if (kept && (service === "kafka" ? await kafkaAnswers([kept.address]) : await cqlAnswers(...hostPort(kept.address)))) {
      say(`${service} container already running (${kept.containerId.slice(0, 12)}, ${image}) at ${kept.address}`);
      return kept;
    }
    await pull(client, image);
    return start();
  };
  const results = await Promise.allSettled([
    one("kafka", KAFKA_IMAGE, () => startKafka(client, keep)),
    one("cassandra", CASSANDRA_IMAGE, () => startCassandra(client, keep)),
  ]);
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed.length > 0) {
    // Do not leave the other one running.
    await Promise.all(results.map((r) => (r.status === "fulfilled" ? r.value.stop().catch(() => undefined) : undefined)));
    throw new Error(failed.map((r) => (r.reason instanceof Error ? r.reason.message : String(r.reason))).join("\n"));
  }
  const [kafka, cassandra] = results.map((r) => (r as PromiseFulfilledResult<Endpoint>).value) as [Endpoint, Endpoint];
  return { kafka, cassandra };
}

function hostPort(address: string): [string, number] {
  const i = address.lastIndexOf(":");
  return [address.slice(0, i), Number(address.slice(i + 1))];
}

/** Stops the Kafka container (TERM, KILL after 30 s); it keeps its data and its port. */
export async function stopKafkaContainer(id: string): Promise<void> {
  const client = await getContainerRuntimeClient();
  await client.container.stop(client.container.getById(id), { timeout: 30_000 });
}

/** Starts the stopped Kafka container again and waits until the broker answers at `address`. */
export async function startKafkaContainer(id: string, address: string): Promise<void> {
  const client = await getContainerRuntimeClient();
  const container = client.container.getById(id);
  const t0 = Date.now();
  await client.container.start(container);
  if (!(await until(() => kafkaAnswers([address]), KAFKA_START_TIMEOUT_MS)))
    throw new Error(`kafka container ${id.slice(0, 12)} does not answer at ${address} after a restart`);
  say(`kafka container started again in ${seconds(Date.now() - t0)}`);
}

/** The Kafka container is running. */
export async function kafkaContainerRunning(id: string): Promise<boolean> {
  const client = await getContainerRuntimeClient();
  return (await client.container.inspect(client.container.getById(id))).State.Running;
}
