import { defineConfig } from "vitest/config";

// unit: beside the code. media: the encoder against real ffmpeg and ffprobe. api: the API suites
// against the embedded mode. api-cluster: the same suites against 2 gateways and 2 actor hosts on
// real Kafka and Cassandra. cluster: adapter contracts and failure tests that need the real
// infrastructure.
// A test's time limit catches a hang, not slowness: with two lanes side by side (scripts/test.sh) a
// test that encodes or transcribes gets half the cores, so the limits are twice what one lane needs.
// MEDIA_TEST_CPUFLAGS=0 runs every ffmpeg without its CPU-specific code (test/cpuflags.ts).
const slow = { testTimeout: 240_000, hookTimeout: 300_000, pool: "forks" as const, setupFiles: ["test/cpuflags.ts"] };
const cluster = { ...slow, globalSetup: ["test/cluster/infra.setup.ts"] };
// The Kafka and Cassandra adapters' contracts: in the cluster project, or, where scripts/test.sh
// found a container engine (MEDIA_TEST_CONTRACTS_IN_CONTAINERS=1), in cluster-containers only.
const CONTRACTS = ["test/cluster/kafka-bus.test.ts", "test/cluster/cassandra-store.test.ts"];
const inContainers = process.env.MEDIA_TEST_CONTRACTS_IN_CONTAINERS === "1" ? CONTRACTS : [];

export default defineConfig({
  test: {
    // One file at a time within a vitest process: cluster suites stop and start Kafka, clusters are
    // heavy, and ffmpeg takes every core. scripts/test.sh runs two processes side by side, the
    // projects on Kafka and Cassandra in one and the rest in the other. Vitest 3.2 takes this setting
    // from the root only (a project's own fileParallelism is ignored).
    fileParallelism: false,
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "src/**/*.spec.ts",
            "actors/**/*.spec.ts",
            "wire/**/*.spec.ts",
            "gateway/**/*.spec.ts",
            "delivery/**/*.spec.ts",
            "encoder-node/**/*.spec.ts",
            "main/**/*.spec.ts",
          ],
        },
      },
      { test: { name: "media", include: ["test/media/**/*.test.ts"], ...slow } },
      { test: { name: "api", include: ["test/api/**/*.test.ts", "test/oidc/**/*.test.ts", "test/clients/**/*.test.ts"], ...slow } },
      // On the peers' SASL_SSL and TLS listeners where the setup offers them (test/cluster/secure-peers.ts).
      {
        test: {
          name: "api-cluster",
          include: ["test/api/**/*.test.ts"],
          env: { MEDIA_TEST_TARGET: "cluster" },
          ...cluster,
          setupFiles: [...cluster.setupFiles, "test/cluster/on-secure-peers.ts"],
        },
      },
      { test: { name: "cluster", include: ["test/cluster/**/*.test.ts"], exclude: inContainers, ...cluster } },
      // The adapters' contracts again, on Kafka and Cassandra in containers of the project's own
      // images through testcontainers: scripts/test.sh runs it with MEDIA_TEST_INFRA=containers
      // once deploy/images/build.sh has built them.
      { test: { name: "cluster-containers", include: CONTRACTS, ...cluster } },
      { test: { name: "fuzz", include: ["test/fuzz/**/*.test.ts"], ...slow } },
      { test: { name: "conformance", include: ["test/conformance/**/*.test.ts"], ...slow } },
      { test: { name: "runtime", include: ["test/runtime/**/*.test.ts"], ...slow } },
      { test: { name: "browser", include: ["test/browser/**/*.test.ts"], ...slow } },
      // The Prometheus rules and the Grafana dashboard of deploy/observe, checked by promtool and
      // Prometheus's parser.
      { test: { name: "observe", include: ["test/observe/**/*.test.ts"], ...slow } },
      // Images, compose files and the chart (deploy/): a container engine, started if needed.
      { test: { name: "deploy", include: ["test/deploy/**/*.test.ts"], ...slow, testTimeout: 900_000, hookTimeout: 900_000 } },
    ],
  },
});
