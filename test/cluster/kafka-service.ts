// Stopping and starting the tests' Kafka, whoever runs it: infra/kafka.sh for the local scripts, the
// container's stop and start for the containers provider (its advertised host port survives that).
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { infraProvider, kafkaBrokers } from "./endpoints.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const SCRIPT = path.join(ROOT, "infra/kafka.sh");

const containerId = (): string => {
  const id = process.env.MEDIA_TEST_KAFKA_CONTAINER;
  if (!id) throw new Error("MEDIA_TEST_KAFKA_CONTAINER is not set: the containers provider of test/cluster/infra.setup.ts did not run");
  return id;
};

/** Stops Kafka; its data is kept. */
export async function kafkaDown(): Promise<void> {
  if (infraProvider() === "local") return void (await run("bash", [SCRIPT, "down"], { cwd: ROOT, timeout: 150_000 }));
  const { stopKafkaContainer } = await import("./containers.js");
  await stopKafkaContainer(containerId());
}

/** Starts Kafka again and waits until it answers. */
export async function kafkaUp(): Promise<void> {
  if (infraProvider() === "local") return void (await run("bash", [SCRIPT, "up"], { cwd: ROOT, timeout: 150_000 }));
  const { startKafkaContainer } = await import("./containers.js");
  await startKafkaContainer(containerId(), kafkaBrokers()[0]!);
}

/** Kafka is running. */
export async function kafkaRunning(): Promise<boolean> {
  if (infraProvider() === "local") {
    return run("bash", [SCRIPT, "status"], { cwd: ROOT, timeout: 150_000 }).then(
      () => true,
      () => false,
    );
  }
  const { kafkaContainerRunning } = await import("./containers.js");
  return kafkaContainerRunning(containerId());
}
