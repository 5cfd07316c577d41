// How the bus's clients reach a secured Kafka (TLS, SASL PLAIN or SCRAM), and what a refused
// connection says about the settings: a start that fails on them names the one at fault.
import type { KafkaConfig, SASLOptions } from "kafkajs";
import { ConfigError, type ClusterConfig, type KafkaSasl, type TlsFiles } from "../config.js";
import { certificateProblem, tlsClientOptions } from "../tls-client.js";

/** Kafka's address and security, as the configuration names them; every Kafka client of a process takes the same. */
export interface KafkaConnection {
  readonly brokers: readonly string[];
  /** TLS (MEDIA_KAFKA_SSL=on); undefined: plaintext. */
  readonly tls?: TlsFiles | undefined;
  /** SASL (MEDIA_KAFKA_SASL_MECHANISM); undefined: none. */
  readonly sasl?: KafkaSasl | undefined;
}

export const kafkaConnection = (c: ClusterConfig): KafkaConnection => ({ brokers: c.kafkaBrokers, tls: c.kafkaTls, sasl: c.kafkaSasl });

/** kafkajs's `ssl` and `sasl` for a connection. */
export function kafkajsSecurity(connection: KafkaConnection): Pick<KafkaConfig, "ssl" | "sasl"> {
  const { tls, sasl } = connection;
  return { ...(tls ? { ssl: tlsClientOptions(tls) } : {}), ...(sasl ? { sasl: saslOptions(sasl) } : {}) };
}

function saslOptions({ mechanism, username, password }: KafkaSasl): SASLOptions {
  switch (mechanism) {
    case "plain":
      return { mechanism, username, password };
    case "scram-sha-256":
      return { mechanism, username, password };
    case "scram-sha-512":
      return { mechanism, username, password };
  }
}

const SASL_MECHANISM_ERRORS = new Set(["UNSUPPORTED_SASL_MECHANISM", "ILLEGAL_SASL_STATE"]);

/** Every error inside `e` (kafkajs wraps the cause of its retries). */
function chain(e: unknown): { name?: string; type?: string; message?: string }[] {
  const out: { name?: string; type?: string; message?: string }[] = [];
  for (let err: unknown = e; typeof err === "object" && err !== null && out.length < 8;) {
    const x = err as { name?: string; type?: string; message?: string; originalError?: unknown; cause?: unknown };
    out.push(x);
    err = x.originalError ?? x.cause;
  }
  return out;
}

/** The setting a failed connection to Kafka points at, as a ConfigError; undefined when it is none of the security settings. */
export function securityRefusal(e: unknown, connection: KafkaConnection): ConfigError | undefined {
  const where = connection.brokers.join(",");
  const cert = certificateProblem(e);
  if (cert?.kind === "hostname")
    return new ConfigError(
      "MEDIA_KAFKA_BROKERS",
      `Kafka's certificate at ${where} names other hosts (${cert.message}); use a broker address the certificate holds`,
    );
  if (cert)
    return new ConfigError(
      "MEDIA_KAFKA_SSL_CA_FILE",
      `Kafka's certificate at ${where} is not trusted (${cert.message}); ${
        connection.tls?.caFile ? `${connection.tls.caFile} is not the CA that signed it` : "set MEDIA_KAFKA_SSL_CA_FILE to the PEM of the CA that signed it"
      }`,
    );
  const errors = chain(e);
  const sasl = connection.sasl;
  const mechanism = sasl?.mechanism.toUpperCase();
  if (sasl && errors.some((x) => SASL_MECHANISM_ERRORS.has(x.type ?? "") || /mechanism is not supported/i.test(x.message ?? ""))) {
    return new ConfigError(
      "MEDIA_KAFKA_SASL_MECHANISM",
      `Kafka at ${where} does not offer SASL ${mechanism} on this listener (a listener without SASL, or with other mechanisms)`,
    );
  }
  const auth = errors.find((x) => x.name === "KafkaJSSASLAuthenticationError" || x.type === "SASL_AUTHENTICATION_FAILED");
  if (auth && sasl) {
    return new ConfigError(
      "MEDIA_KAFKA_SASL_PASSWORD",
      `Kafka at ${where} refused the SASL ${mechanism} login of "${sasl.username}": a wrong password, or no ${mechanism} credentials for that user ` +
        `(check MEDIA_KAFKA_SASL_USERNAME and MEDIA_KAFKA_SASL_MECHANISM) (${auth.message})`,
    );
  }
  return undefined;
}

/** A hint for a broker that answers nothing the client understands: TLS on one side only, or SASL expected. */
export function listenerHint(connection: KafkaConnection): string {
  return connection.tls
    ? " (MEDIA_KAFKA_SSL is on: is this a TLS listener?)"
    : " (is this a TLS listener? then set MEDIA_KAFKA_SSL=on" + (connection.sasl ? ")" : ", and MEDIA_KAFKA_SASL_* if it asks for a login)");
}
