// The secured listeners of the local peers (infra/kafka.sh KAFKA_SECURE=1, infra/cassandra.sh
// CASSANDRA_SECURE=1) for the cluster projects. The peers offer both kinds: Kafka a PLAINTEXT and a
// SASL_SSL listener, Cassandra optional TLS on its one port and a password for every client. The
// `cluster` project stays on the plain ones (with the password, which Cassandra asks of everyone);
// `api-cluster` runs on SASL_SSL with SCRAM-SHA-512 and on TLS: the setup publishes their settings
// as MEDIA_TEST_SECURE_PEERS, and test/cluster/on-secure-peers.ts puts them in that project's
// environment. One broker and one node serve both projects, so the run costs what it did.
import path from "node:path";
import cassandra from "cassandra-driver";
import { KafkaBus } from "../../src/bus/kafka-bus.js";
import { clusterConfig } from "../../src/config.js";
import { cassandraClientOptions, cassandraConnection } from "../../src/store/cassandra-store.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The scripts' defaults (KAFKA_SCRAM_USER, KAFKA_PLAIN_USER, Cassandra's own superuser). */
export const SCRAM_USER = { username: process.env.KAFKA_SCRAM_USER || "media", password: process.env.KAFKA_SCRAM_PASSWORD || "media-secret" };
export const PLAIN_USER = { username: process.env.KAFKA_PLAIN_USER || "media_plain", password: process.env.KAFKA_PLAIN_PASSWORD || "media-plain-secret" };
export const CASSANDRA_USER = { username: "cassandra", password: "cassandra" };

/** The CA the scripts made (infra/lib.sh ensure_tls). */
export const infraCaFile = (): string => path.join(process.env.MEDIA_INFRA_DIR || path.join(ROOT, ".infra"), "tls", "ca.pem");

/** Whether this run asks the local peers for their secure listeners (MEDIA_TEST_SECURE_PEERS_OFF=1 keeps the plain ones only). */
export const secureWanted = (): boolean => process.env.MEDIA_TEST_SECURE_PEERS_OFF !== "1";

/** The settings of the secure listeners, as the service reads them. */
export function secureSettings(): Record<string, string> {
  return {
    MEDIA_KAFKA_BROKERS: `127.0.0.1:${process.env.KAFKA_SECURE_PORT || "9094"}`,
    MEDIA_KAFKA_SSL: "on",
    MEDIA_KAFKA_SSL_CA_FILE: infraCaFile(),
    MEDIA_KAFKA_SASL_MECHANISM: "scram-sha-512",
    MEDIA_KAFKA_SASL_USERNAME: SCRAM_USER.username,
    MEDIA_KAFKA_SASL_PASSWORD: SCRAM_USER.password,
    MEDIA_CASSANDRA_CONTACT_POINTS: `127.0.0.1:${process.env.CASSANDRA_PORT || "9042"}`,
    MEDIA_CASSANDRA_SSL: "on",
    MEDIA_CASSANDRA_SSL_CA_FILE: infraCaFile(),
    MEDIA_CASSANDRA_USERNAME: CASSANDRA_USER.username,
    MEDIA_CASSANDRA_PASSWORD: CASSANDRA_USER.password,
  };
}

/**
 * Checks the secure listeners with the service's own clients and publishes them: the password for
 * every project, the rest for api-cluster. Throws, saying what to do, when running peers were started without them.
 */
export async function publishSecurePeers(): Promise<void> {
  const settings = secureSettings();
  const c = clusterConfig(settings);
  const bus = new KafkaBus({ brokers: c.kafkaBrokers, tls: c.kafkaTls, sasl: c.kafkaSasl, clientId: "media-test-infra" });
  const client = new cassandra.Client({ ...cassandraClientOptions(cassandraConnection(c)), socketOptions: { connectTimeout: 10_000 } });
  try {
    await bus.start();
    await client.connect();
  } catch (e) {
    throw new Error(
      `the local peers do not answer on their secure listeners (${String(e)}); if they were started without them, ` +
        "restart them (bash infra/kafka.sh down; bash infra/cassandra.sh down) or set MEDIA_TEST_SECURE_PEERS_OFF=1",
    );
  } finally {
    await bus.close();
    await client.shutdown().catch(() => undefined);
  }
  process.env.MEDIA_CASSANDRA_USERNAME = CASSANDRA_USER.username;
  process.env.MEDIA_CASSANDRA_PASSWORD = CASSANDRA_USER.password;
  process.env.MEDIA_TEST_SECURE_PEERS = JSON.stringify(settings);
}
