// Where the cluster tests find Kafka and Cassandra. test/cluster/infra.setup.ts (the global setup
// of the cluster projects) publishes them in the environment, which the test workers and the
// cluster processes they launch inherit; without it, the defaults of infra/kafka.sh and
// infra/cassandra.sh (and of src/config.ts) apply.

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
