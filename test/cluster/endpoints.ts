// Where the cluster tests find Kafka and Cassandra. test/cluster/infra.setup.ts (the global setup
// of the cluster projects) publishes them in the environment, which the test workers and the
// cluster processes they launch inherit; without it, the defaults of infra/kafka.sh and
// infra/cassandra.sh (and of src/config.ts) apply.
import cassandra from "cassandra-driver";
import { kafkaConnection, kafkajsSecurity, type KafkaConnection } from "../../src/bus/kafka-security.js";
import { clusterConfig } from "../../src/config.js";
import { cassandraClientOptions, cassandraConnection, type CassandraConnection } from "../../src/store/cassandra-store.js";

const LOCAL_KAFKA = "127.0.0.1:9092";
const LOCAL_CASSANDRA = "127.0.0.1:9042";

const list = (value: string | undefined, fallback: string): string[] => {
  const items = (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return items.length > 0 ? items : [fallback];
};

/** Kafka bootstrap servers: MEDIA_KAFKA_BROKERS, else 127.0.0.1:9092. */
export const kafkaBrokers = (): string[] => list(process.env.MEDIA_KAFKA_BROKERS, LOCAL_KAFKA);

/** The Cassandra contact point (host:port): the first of MEDIA_CASSANDRA_CONTACT_POINTS, else 127.0.0.1:9042. */
export const cassandraContactPoint = (): string => list(process.env.MEDIA_CASSANDRA_CONTACT_POINTS, LOCAL_CASSANDRA)[0]!;

/**
 * Who runs the infrastructure of this test run: "containers" when the global setup started (or
 * found) Docker containers, "local" for the infra/ scripts (also when no global setup ran).
 */
export const infraProvider = (): "local" | "containers" => (process.env.MEDIA_TEST_INFRA_PROVIDER === "containers" ? "containers" : "local");

/**
 * Kafka as this project reaches it: the brokers and, on a secured listener, TLS and SASL (the
 * MEDIA_KAFKA_* settings the setup published, test/cluster/secure-peers.ts).
 */
export const kafkaPeer = (): KafkaConnection => ({ ...kafkaConnection(clusterConfig(process.env)), brokers: kafkaBrokers() });

/** Options of the tests' own kafkajs clients (admins, consumers): the same security as the service's. */
export const kafkajsOptions = (clientId: string) => ({ brokers: kafkaBrokers(), clientId, ...kafkajsSecurity(kafkaPeer()) });

/** Cassandra as this project reaches it: the contact point, the password login and TLS the setup published. */
export const cassandraPeer = (): CassandraConnection => ({ ...cassandraConnection(clusterConfig(process.env)), contactPoints: [cassandraContactPoint()] });

/** A driver client of the tests' own (schema checks, keyspace drops) with the service's login and TLS; connect and shut it down. */
export const cassandraClient = (): cassandra.Client => new cassandra.Client(cassandraClientOptions(cassandraPeer()));
