import { defineConfig } from "vitest/config";

// unit: beside the code. media: the encoder against real ffmpeg and ffprobe. api: the API suites
// against the embedded mode. api-cluster: the same suites against 2 gateways and 2 actor hosts on
// real Kafka and Cassandra. cluster: adapter contracts and failure tests that need the real
// infrastructure.
const slow = { testTimeout: 120_000, hookTimeout: 180_000, pool: "forks" as const };
// One file at a time: suites stop and start Kafka, and clusters are heavy on 2 cores.
const cluster = { ...slow, globalSetup: ["test/cluster/infra.setup.ts"], fileParallelism: false, poolOptions: { forks: { singleFork: true } } };

export default defineConfig({
  test: {
    projects: [
      { test: { name: "unit", include: ["src/**/*.spec.ts", "gateway/**/*.spec.ts", "actors/**/*.spec.ts", "encoder-node/**/*.spec.ts"] } },
      { test: { name: "media", include: ["test/media/**/*.test.ts"], ...slow } },
      { test: { name: "api", include: ["test/api/**/*.test.ts"], ...slow } },
      { test: { name: "api-cluster", include: ["test/api/**/*.test.ts"], env: { MEDIA_TEST_TARGET: "cluster" }, ...cluster } },
      { test: { name: "cluster", include: ["test/cluster/**/*.test.ts"], ...cluster } },
    ],
  },
});
