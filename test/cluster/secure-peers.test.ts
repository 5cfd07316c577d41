// The service against the secured listeners of the local peers (test/cluster/secure-peers.ts):
// Kafka's SASL_SSL with PLAIN and SCRAM, Cassandra's TLS with a password. What works produces,
// consumes and stores; what is wrong (a password, a missing CA, the other mechanism, TLS off)
// stops `media serve` with exit code 2 and one line naming the setting, within seconds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaBus } from "../../src/bus/kafka-bus.js";
import { kafkaConnection } from "../../src/bus/kafka-security.js";
import { clusterConfig } from "../../src/config.js";
import { CassandraStore, cassandraConnection } from "../../src/store/cassandra-store.js";
import { dropKeyspace, freePort, freshKeyspace, tempDataDir } from "../harness.js";
import { kafkaBrokers } from "./endpoints.js";
import { runMedia, type Exit } from "./run-media.js";
import { PLAIN_USER, SCRAM_USER } from "./secure-peers.js";

const published = process.env.MEDIA_TEST_SECURE_PEERS;
/** The settings of the secure listeners, as api-cluster runs on them. */
const secure: Record<string, string> = published ? (JSON.parse(published) as Record<string, string>) : {};
const keyspace = freshKeyspace();
const dataDir = tempDataDir();

if (!published) {
  process.stderr.write("secure-peers: skipped, the global setup offered no secure listeners (the containers provider, or MEDIA_TEST_SECURE_PEERS_OFF=1)\n");
}

/** The environment without the runner's MEDIA_* settings: each case sets the secure ones and its fault. */
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MEDIA_")));

/** `node bin/media.js serve` in cluster mode on the secure settings plus `env` (an empty value unsets one), until it exits. */
function runServe(env: Record<string, string>, timeoutMs = 45_000): Promise<Exit> {
  const merged: Record<string, string> = {
    ...baseEnv,
    ...secure,
    MEDIA_MODE: "cluster",
    MEDIA_DATA_DIR: dataDir,
    MEDIA_HTTP_HOST: "127.0.0.1",
    MEDIA_HTTP_PORT: String(freePort()),
    MEDIA_CASSANDRA_KEYSPACE: keyspace,
    ...env,
  };
  return runMedia("serve", Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== "")), timeoutMs);
}

const settings = (env: Record<string, string>) => clusterConfig({ ...secure, ...env });

describe.skipIf(!published)("secure peers", () => {
  beforeAll(async () => {
    // The schema once, over TLS with the password, before the cases' processes open the keyspace.
    const store = new CassandraStore({ ...cassandraConnection(settings({})), keyspace });
    await store.open();
    await store.close();
  }, 120_000);

  afterAll(async () => {
    await dropKeyspace(keyspace);
  }, 120_000);

  for (const [name, env] of [
    ["PLAIN", { MEDIA_KAFKA_SASL_MECHANISM: "plain", MEDIA_KAFKA_SASL_USERNAME: PLAIN_USER.username, MEDIA_KAFKA_SASL_PASSWORD: PLAIN_USER.password }],
    ["SCRAM-SHA-256", { MEDIA_KAFKA_SASL_MECHANISM: "scram-sha-256" }],
  ] as const) {
    it(`a bus logged in with ${name} over TLS produces and consumes`, async () => {
      const bus = new KafkaBus({ ...kafkaConnection(settings(env)), clientId: `secure-${name}` });
      await bus.start();
      const topic = `media.test.secure-${name.toLowerCase()}-${process.pid}-${Date.now()}`;
      try {
        await bus.ensureTopics([{ topic, partitions: 1 }]);
        const got: string[] = [];
        let received!: () => void;
        const done = new Promise<void>((r) => (received = r));
        const consumer = await bus.consume({
          topic,
          group: `${topic}-group`,
          handler: async (m) => {
            got.push(`${m.key}=${Buffer.from(m.value).toString()}`);
            if (got.length === 2) received();
          },
        });
        await bus.publish(topic, [
          { key: "a", value: Buffer.from("one") },
          { key: "a", value: Buffer.from("two") },
        ]);
        await done;
        await consumer.stop();
        expect(got).toEqual(["a=one", "a=two"]);
      } finally {
        await bus.close();
      }
    }, 90_000);
  }

  it("the store writes and reads over TLS with the password", async () => {
    const store = new CassandraStore({ ...cassandraConnection(settings({})), keyspace });
    await store.open();
    try {
      await store.commit({ writes: [{ table: "secure_peers", id: "one", value: { over: "tls" }, expectedVersion: 0 }] });
      expect((await store.get<{ over: string }>("secure_peers", "one"))?.value).toEqual({ over: "tls" });
    } finally {
      await store.close();
    }
  }, 60_000);

  const CASES: { name: string; env: Record<string, string>; setting: string; says: RegExp }[] = [
    {
      name: "a wrong Kafka password",
      env: { MEDIA_KAFKA_SASL_PASSWORD: "wrong" },
      setting: "MEDIA_KAFKA_SASL_PASSWORD",
      says: new RegExp(`SCRAM-SHA-512 login of "${SCRAM_USER.username}"`),
    },
    {
      name: "a PLAIN user logging in with SCRAM",
      env: { MEDIA_KAFKA_SASL_USERNAME: PLAIN_USER.username, MEDIA_KAFKA_SASL_PASSWORD: PLAIN_USER.password },
      setting: "MEDIA_KAFKA_SASL_PASSWORD",
      says: /no SCRAM-SHA-512 credentials for that user .*MEDIA_KAFKA_SASL_MECHANISM/,
    },
    {
      name: "a SCRAM user logging in with PLAIN",
      env: { MEDIA_KAFKA_SASL_MECHANISM: "plain" },
      setting: "MEDIA_KAFKA_SASL_PASSWORD",
      says: /SASL PLAIN login of/,
    },
    {
      name: "Kafka's CA missing (the system's roots only)",
      env: { MEDIA_KAFKA_SSL_CA_FILE: "" },
      setting: "MEDIA_KAFKA_SSL_CA_FILE",
      says: /not trusted/,
    },
    {
      name: "TLS off against the SASL_SSL listener",
      env: { MEDIA_KAFKA_SSL: "", MEDIA_KAFKA_SSL_CA_FILE: "" },
      setting: "MEDIA_KAFKA_BROKERS",
      says: /MEDIA_KAFKA_SSL=on/,
    },
    {
      name: "a SASL login against the PLAINTEXT listener",
      env: { MEDIA_KAFKA_BROKERS: kafkaBrokers().join(","), MEDIA_KAFKA_SSL: "", MEDIA_KAFKA_SSL_CA_FILE: "" },
      setting: "MEDIA_KAFKA_SASL_MECHANISM",
      says: /does not offer SASL SCRAM-SHA-512 on this listener/,
    },
    {
      name: "a wrong Cassandra password",
      env: { MEDIA_CASSANDRA_PASSWORD: "wrong" },
      setting: "MEDIA_CASSANDRA_USERNAME",
      says: /MEDIA_CASSANDRA_PASSWORD.*incorrect/,
    },
    {
      name: "Cassandra's CA missing (the system's roots only)",
      env: { MEDIA_CASSANDRA_SSL_CA_FILE: "" },
      setting: "MEDIA_CASSANDRA_SSL_CA_FILE",
      says: /not trusted/,
    },
    {
      name: "a mechanism Kafka's clients do not have",
      env: { MEDIA_KAFKA_SASL_MECHANISM: "gssapi" },
      setting: "MEDIA_KAFKA_SASL_MECHANISM",
      says: /plain, scram-sha-256, scram-sha-512/,
    },
  ];

  for (const c of CASES) {
    it(`${c.name} stops the service naming ${c.setting}`, async () => {
      const exit = await runServe(c.env);
      const lines = exit.output.split("\n").filter((l) => l.trim() !== "");
      expect({ code: exit.code, lines: lines.length }, exit.output).toEqual({ code: 2, lines: 1 });
      expect(lines[0]).toMatch(new RegExp(`^media: bad configuration: ${c.setting}: \\S`));
      expect(lines[0]).toMatch(c.says);
      // Refused, not retried until a supervisor gives up.
      expect(exit.ms, `took ${exit.ms} ms`).toBeLessThan(30_000);
    }, 60_000);
  }
});
