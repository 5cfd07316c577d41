// The settings of managed Kafka, Cassandra and S3: what each accepts, and the setting a mistake names.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { clusterConfig, ConfigError, loadConfig } from "./config.js";

const dir = mkdtempSync(path.join(tmpdir(), "config-spec-"));
const file = (name: string, text: string) => {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
};
const CA = file("ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
const KEY = file("client.key", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");

/** The setting a ConfigError names, or "ok". */
function named(env: Record<string, string>, load: (env: Record<string, string>) => unknown = clusterConfig): string {
  try {
    load(env);
    return "ok";
  } catch (e) {
    if (e instanceof ConfigError) return e.setting;
    throw e;
  }
}

describe("Kafka TLS and SASL", () => {
  it("are off by default", () => {
    const c = clusterConfig({});
    expect([c.kafkaTls, c.kafkaSasl]).toEqual([undefined, undefined]);
  });

  it("reads TLS with the system roots or a CA, and a SCRAM login with its password from a file", () => {
    expect(clusterConfig({ MEDIA_KAFKA_SSL: "on" }).kafkaTls).toEqual({ caFile: undefined, certFile: undefined, keyFile: undefined });
    const c = clusterConfig({
      MEDIA_KAFKA_SSL: "on",
      MEDIA_KAFKA_SSL_CA_FILE: CA,
      MEDIA_KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
      MEDIA_KAFKA_SASL_USERNAME: "media",
      MEDIA_KAFKA_SASL_PASSWORD_FILE: file("kafka-password", "s3cret\n"),
    });
    expect(c.kafkaTls?.caFile).toBe(CA);
    expect(c.kafkaSasl).toEqual({ mechanism: "scram-sha-512", username: "media", password: "s3cret" });
  });

  it("name the setting at fault", () => {
    expect(named({ MEDIA_KAFKA_SSL: "yes" })).toBe("MEDIA_KAFKA_SSL");
    expect(named({ MEDIA_KAFKA_SSL_CA_FILE: CA })).toBe("MEDIA_KAFKA_SSL_CA_FILE"); // TLS is off
    expect(named({ MEDIA_KAFKA_SSL: "on", MEDIA_KAFKA_SSL_CA_FILE: path.join(dir, "absent.pem") })).toBe("MEDIA_KAFKA_SSL_CA_FILE");
    expect(named({ MEDIA_KAFKA_SSL: "on", MEDIA_KAFKA_SSL_CA_FILE: KEY })).toBe("MEDIA_KAFKA_SSL_CA_FILE"); // no certificate in it
    expect(named({ MEDIA_KAFKA_SSL: "on", MEDIA_KAFKA_SSL_CERT_FILE: CA })).toBe("MEDIA_KAFKA_SSL_KEY_FILE");
    expect(named({ MEDIA_KAFKA_SASL_MECHANISM: "gssapi", MEDIA_KAFKA_SASL_USERNAME: "u", MEDIA_KAFKA_SASL_PASSWORD: "p" })).toBe("MEDIA_KAFKA_SASL_MECHANISM");
    expect(named({ MEDIA_KAFKA_SASL_USERNAME: "u", MEDIA_KAFKA_SASL_PASSWORD: "p" })).toBe("MEDIA_KAFKA_SASL_MECHANISM");
    expect(named({ MEDIA_KAFKA_SASL_MECHANISM: "plain", MEDIA_KAFKA_SASL_PASSWORD: "p" })).toBe("MEDIA_KAFKA_SASL_USERNAME");
    expect(named({ MEDIA_KAFKA_SASL_MECHANISM: "plain", MEDIA_KAFKA_SASL_USERNAME: "u" })).toBe("MEDIA_KAFKA_SASL_PASSWORD");
    expect(
      named({ MEDIA_KAFKA_SASL_MECHANISM: "plain", MEDIA_KAFKA_SASL_USERNAME: "u", MEDIA_KAFKA_SASL_PASSWORD: "p", MEDIA_KAFKA_SASL_PASSWORD_FILE: CA }),
    ).toBe("MEDIA_KAFKA_SASL_PASSWORD_FILE");
    expect(named({ MEDIA_KAFKA_SASL_MECHANISM: "plain", MEDIA_KAFKA_SASL_USERNAME: "u", MEDIA_KAFKA_SASL_PASSWORD_FILE: file("empty", "\n") })).toBe(
      "MEDIA_KAFKA_SASL_PASSWORD_FILE",
    );
  });
});

describe("Cassandra TLS and password", () => {
  it("verify the host name unless told not to, and read the password from a file", () => {
    const c = clusterConfig({
      MEDIA_CASSANDRA_SSL: "on",
      MEDIA_CASSANDRA_SSL_CA_FILE: CA,
      MEDIA_CASSANDRA_USERNAME: "media",
      MEDIA_CASSANDRA_PASSWORD_FILE: file("cassandra-password", "pw\n"),
    });
    expect(c.cassandraTls).toEqual({ caFile: CA, certFile: undefined, keyFile: undefined, verifyHostname: true });
    expect([c.cassandraUsername, c.cassandraPassword]).toEqual(["media", "pw"]);
    expect(clusterConfig({ MEDIA_CASSANDRA_SSL: "on", MEDIA_CASSANDRA_SSL_HOSTNAME_VERIFICATION: "off" }).cassandraTls?.verifyHostname).toBe(false);
  });

  it("name the setting at fault", () => {
    expect(named({ MEDIA_CASSANDRA_SSL_KEY_FILE: KEY })).toBe("MEDIA_CASSANDRA_SSL_KEY_FILE");
    expect(named({ MEDIA_CASSANDRA_SSL: "on", MEDIA_CASSANDRA_SSL_KEY_FILE: KEY })).toBe("MEDIA_CASSANDRA_SSL_CERT_FILE");
    expect(named({ MEDIA_CASSANDRA_SSL_HOSTNAME_VERIFICATION: "no" })).toBe("MEDIA_CASSANDRA_SSL_HOSTNAME_VERIFICATION");
    expect(named({ MEDIA_CASSANDRA_PASSWORD: "pw" })).toBe("MEDIA_CASSANDRA_USERNAME");
  });
});

describe("the managed bucket's keys", () => {
  const base = { MEDIA_MANAGED_S3_BUCKET: "media-managed" };
  const managed = (env: Record<string, string>) => loadConfig({ ...base, ...env }).managed;

  it("are optional: none leaves the SDK's default credential chain", () => {
    expect(managed({})).toMatchObject({ kind: "s3", keys: undefined });
    expect(managed({ MEDIA_MANAGED_S3_ACCESS_KEY_ID: "AKIA", MEDIA_MANAGED_S3_SECRET_ACCESS_KEY: "s" })).toMatchObject({
      keys: { accessKeyId: "AKIA", secretAccessKey: "s" },
    });
  });

  it("come both or not at all", () => {
    expect(named({ ...base, MEDIA_MANAGED_S3_ACCESS_KEY_ID: "AKIA" }, loadConfig)).toBe("MEDIA_MANAGED_S3_SECRET_ACCESS_KEY");
    expect(named({ ...base, MEDIA_MANAGED_S3_SECRET_ACCESS_KEY: "s" }, loadConfig)).toBe("MEDIA_MANAGED_S3_ACCESS_KEY_ID");
  });
});
