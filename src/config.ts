// Typed configuration from the environment, validated once at start and then frozen.
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseAllowEntry } from "./net-guard.js";

export interface ClusterConfig {
  readonly kafkaBrokers: readonly string[];
  /** Prefix of this deployment's topics and consumer groups; default media.<keyspace>. */
  readonly topicPrefix: string;
  /** Partitions of the commands topic: the most actor hosts that can share the entities. */
  readonly commandPartitions: number;
  /** How long a busy producer waits to gather more messages into a send (MEDIA_KAFKA_LINGER_MS). */
  readonly kafkaLingerMs: number;
  /**
   * Gateways' commands straight to the owning actor host (MEDIA_DIRECT_COMMANDS; actors/direct.ts),
   * Kafka where no route is known; undefined: every command through Kafka.
   */
  readonly directCommands: DirectCommands | undefined;
  readonly cassandraContactPoints: readonly string[];
  readonly cassandraLocalDataCenter: string;
  readonly cassandraKeyspace: string;
  readonly cassandraReplication: string;
  /** TLS to Kafka (MEDIA_KAFKA_SSL=on); undefined: plaintext. */
  readonly kafkaTls: TlsFiles | undefined;
  /** SASL login to Kafka (MEDIA_KAFKA_SASL_MECHANISM); undefined: none. */
  readonly kafkaSasl: KafkaSasl | undefined;
  readonly cassandraUsername: string | undefined;
  /** MEDIA_CASSANDRA_PASSWORD, or the content of MEDIA_CASSANDRA_PASSWORD_FILE. */
  readonly cassandraPassword: string | undefined;
  /** Client TLS to Cassandra (MEDIA_CASSANDRA_SSL=on); undefined: plaintext. */
  readonly cassandraTls: (TlsFiles & { readonly verifyHostname: boolean }) | undefined;
  /** Apply infra/cql migrations at start; false requires the keyspace to exist. */
  readonly cassandraCreateSchema: boolean;
}

/**
 * PEM files of a TLS client, checked readable at start. Without a CA file the system's roots are
 * trusted; a certificate and its key (both or neither) identify the client to a server that asks.
 */
export interface TlsFiles {
  readonly caFile: string | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
}

export interface DirectCommands {
  /** Where an actor host listens for gateways' commands (MEDIA_DIRECT_COMMANDS_LISTEN); port 0: any free port. */
  readonly listenHost: string;
  readonly listenPort: number;
  /** The host gateways connect to (MEDIA_DIRECT_COMMANDS_ADVERTISE); default: this machine's first non-loopback IPv4. */
  readonly advertiseHost: string;
}

export interface KafkaSasl {
  readonly mechanism: "plain" | "scram-sha-256" | "scram-sha-512";
  readonly username: string;
  readonly password: string;
}

export interface Config {
  /** embedded: one process, file store, in-process bus; cluster: Kafka and Cassandra. */
  readonly mode: "embedded" | "cluster";
  readonly cluster: ClusterConfig;
  readonly httpPort: number;
  readonly httpHost: string;
  /** Port of this process's own metrics listener (MEDIA_METRICS_PORT), any role; unset for none. */
  readonly metricsPort: number | undefined;
  /** HTTP host adapter: uWebSockets.js (default) or node:http (reference for benchmarks, fallback). */
  readonly httpServer: "uws" | "node";
  readonly dataDir: string;
  /** Largest request message the gateway reads, in bytes, after decompression. */
  readonly maxRequestBytes: number;
  /** A Watch stream whose client reads nothing while an update waits this long is ended (MEDIA_WATCH_STALL_SECONDS). */
  readonly watchStallMs: number;
  /**
   * On SIGTERM, how long a gateway answers /readyz 503 while still serving, before it closes its
   * listener (MEDIA_DRAIN_DELAY_SECONDS); cluster 5 s, embedded 0 (its one process has no peer to take over).
   */
  readonly drainDelayMs: number;
  /** Browser origins allowed to call the API and the edge (CORS): exact origins, or "*" for any. */
  readonly corsOrigins: readonly string[];
  /** Secret that signs cursors and encrypts secrets at rest; generated into the data folder when unset. */
  readonly serverSecret: string | undefined;
  /** Who signs people in (docs/identity.md). */
  readonly identity: IdentitySettings;
  /** Email of the owner the first start creates. */
  readonly bootstrapEmail: string;
  /** Emails of operator staff: they approve sign-ups and suspend accounts. */
  readonly staffEmails: readonly string[];
  readonly logLevel: string;
  readonly version: string;
  /** Outbound connections: what the network guard lets through besides public addresses. */
  readonly net: {
    /** CIDRs and host names reachable although private or loopback (MEDIA_NET_ALLOW). */
    readonly allow: readonly string[];
    /** PEM file of a CA trusted in addition to the built-in roots (MEDIA_TLS_CA_FILE). */
    readonly tlsCaFile: string | undefined;
  };
  /** Webhook deliveries: per-attempt timeout, and a scale on the retry schedule (tests shrink it). */
  readonly webhooks: { readonly timeoutMs: number; readonly retryScale: number };
  /** Operator overrides of storage endpoints; unset means the providers' public endpoints. */
  readonly storage: {
    /** S3-compatible server used for provider s3 instead of AWS, path-style (MEDIA_S3_ENDPOINT). */
    readonly s3Endpoint: string | undefined;
    /** GCS-compatible JSON API endpoint (MEDIA_GCS_API_ENDPOINT). */
    readonly gcsApiEndpoint: string | undefined;
  };
  /**
   * Where clients and viewers reach the gateways (MEDIA_PUBLIC_URL): upload URLs, the edge and the
   * player page hang off it. Unset: http://localhost:<the port listened on>.
   */
  readonly publicUrl: string | undefined;
  /**
   * Managed storage of hosted videos: a local folder (MEDIA_MANAGED_DIR, default <data>/managed),
   * or an S3-compatible bucket when MEDIA_MANAGED_S3_BUCKET is set (every process of a cluster
   * must then use the same bucket).
   */
  readonly managed:
    | { readonly kind: "local"; readonly dir: string }
    | {
        readonly kind: "s3";
        readonly bucket: string;
        readonly endpoint: string | undefined;
        readonly region: string;
        /** Static keys; undefined: the AWS SDK's default credential chain (environment, shared files, web identity, container or instance role). */
        readonly keys: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
      };
  /**
   * Length of the "day" of delete_source_after_days, and how often each actor host sweeps due
   * sources (MEDIA_SOURCE_RETENTION_DAY_SECONDS shrinks the day for tests).
   */
  readonly sourceRetention: { readonly dayMs: number; readonly sweepMs: number };
  /** Encoder nodes: their worker class and name, and how their leases on encode tasks work. */
  readonly encoder: EncoderSettings;
  /** Request rate limits of each gateway process; undefined switches a limit off. */
  /** Traces exported by OTLP (docs/operations.md, Tracing); undefined: off, the default. */
  readonly tracing: TracingSettings | undefined;
  readonly rateLimits: {
    /** Per API key, and per signed-in user of a portal session (MEDIA_RATE_LIMIT_KEY). */
    readonly key: RatePolicy | undefined;
    /** Per client address: calls without credentials and calls refused by authentication or access (MEDIA_RATE_LIMIT_ANONYMOUS). */
    readonly anonymous: RatePolicy | undefined;
    /** Per client address: methods that need no credentials, i.e. HealthService/Check (MEDIA_RATE_LIMIT_HEALTH). */
    readonly health: RatePolicy | undefined;
    /** Sign-in attempts per client address (MEDIA_RATE_LIMIT_SIGN_IN). */
    readonly signIn: RatePolicy | undefined;
    /** Sign-ins per account (MEDIA_RATE_LIMIT_SIGN_IN_ACCOUNT). */
    readonly signInAccount: RatePolicy | undefined;
  };
}

export interface EncoderSettings {
  /** small, standard or large (MEDIA_ENCODER_CLASS); default from the machine's cores. */
  readonly workerClass: "small" | "standard" | "large";
  /** This node's name in the encode queue (MEDIA_ENCODER_ID); unique per running node. */
  readonly nodeId: string;
  /** A lease on a task not renewed for this long goes back to the queue (MEDIA_ENCODE_LEASE_SECONDS). */
  readonly leaseMs: number;
  /** On SIGTERM, how long the running task may take to finish before it is handed back (MEDIA_ENCODER_DRAIN_SECONDS). */
  readonly drainMs: number;
  /** Hosted videos' streams are published while they encode, playable with their first rung (MEDIA_ENCODER_PROGRESSIVE). */
  readonly progressive: boolean;
  /**
   * A clear HLS ladder at least two chunks long is split into chunks of about this many seconds,
   * encoded by every free node (MEDIA_ENCODER_CHUNK_SECONDS); 0 splits nothing, the embedded default.
   */
  readonly chunkSeconds: number;
}

/** Where and how this process exports traces: the OpenTelemetry SDK's standard OTEL_* settings. */
export interface TracingSettings {
  /** OTLP/HTTP traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  readonly endpoint: string;
  /** OTEL_SERVICE_NAME, default media. */
  readonly serviceName: string;
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on) and its ratio OTEL_TRACES_SAMPLER_ARG (default 1). */
  readonly sampler: { readonly name: TraceSampler; readonly ratio: number };
  /** How long spans wait to leave in a batch (OTEL_BSP_SCHEDULE_DELAY, ms; the SDK's 5000 by default). */
  readonly batchDelayMs: number;
}

export const TRACE_SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/**
 * Tracing is on when an OTLP endpoint is set and OTEL_SDK_DISABLED is not true. The names and
 * meanings are the OpenTelemetry SDK's own, so a collector's usual environment works unchanged.
 */
export function tracingSettings(env: NodeJS.ProcessEnv = process.env): TracingSettings | undefined {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!traces && !base) return undefined;
  const name = traces ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  const raw = traces || base!;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `"${raw}" is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(name, `must be an http:// or https:// URL (OTLP/HTTP), got "${raw}"`);
  // The signal-specific setting is the whole URL; the general one is a base the signal's path joins (OTLP exporter spec).
  const endpoint = traces ? url.href : `${url.href.replace(/\/+$/, "")}/v1/traces`;
  const sampler = (env.OTEL_TRACES_SAMPLER || "parentbased_always_on").trim().toLowerCase();
  if (!(TRACE_SAMPLERS as readonly string[]).includes(sampler))
    throw new ConfigError("OTEL_TRACES_SAMPLER", `must be one of ${TRACE_SAMPLERS.join(", ")}, got "${env.OTEL_TRACES_SAMPLER}"`);
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = arg ? Number(arg) : 1;
  if (sampler.endsWith("traceidratio") && !(arg === undefined || arg === "" || (Number.isFinite(ratio) && ratio >= 0 && ratio <= 1)))
    throw new ConfigError("OTEL_TRACES_SAMPLER_ARG", `must be a ratio between 0 and 1, got "${arg}"`);
  return Object.freeze({
    endpoint,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || "media",
    sampler: Object.freeze({ name: sampler as TraceSampler, ratio: Number.isFinite(ratio) ? ratio : 1 }),
    // The SDK's batch processor no longer reads it itself; it is the one OTEL_BSP_* setting taken here.
    batchDelayMs: integer(env, "OTEL_BSP_SCHEDULE_DELAY", 5000, 1, 600_000),
  });
}

/** A token bucket: `quota` requests per `windowSeconds` sustained, up to `burst` at once. */
export interface RatePolicy {
  readonly quota: number;
  readonly windowSeconds: number;
  readonly burst: number;
}

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`${setting}: ${message}`);
    this.name = "ConfigError";
  }
}

export const VERSION = "0.1.0";

/** MEDIA_CORS_ORIGINS: "*" (the default: callers authenticate with bearer credentials, never cookies), or exact origins. */
function corsOrigins(env: NodeJS.ProcessEnv): readonly string[] {
  const raw = env.MEDIA_CORS_ORIGINS ?? "*";
  const origins = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const origin of origins) {
    if (origin === "*") continue;
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== origin) {
      throw new ConfigError("MEDIA_CORS_ORIGINS", `"${origin}" is not an origin (scheme://host[:port], no path), nor "*"`);
    }
  }
  return Object.freeze(origins);
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

export interface OidcSettings {
  /** The provider's issuer URL, as its discovery document names it. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Audiences a bearer token of the provider may name (the client id and MEDIA_OIDC_AUDIENCES). */
  readonly audiences: readonly string[];
  readonly scopes: string;
  /** Refuse tokens whose email the provider does not say is verified (MEDIA_OIDC_REQUIRE_VERIFIED_EMAIL). */
  readonly requireVerifiedEmail: boolean;
}

export interface IdentitySettings {
  /** The development issuer of `media token`: embedded only (MEDIA_DEV_ISSUER). */
  readonly devIssuer: { readonly issuer: string; readonly audience: string } | undefined;
  /** An OpenID Connect provider for sign-in and bearer tokens (MEDIA_OIDC_*). */
  readonly oidc: OidcSettings | undefined;
  /** Tolerance of token times (exp, nbf, iat). */
  readonly clockSkewSeconds: number;
  /** A session ends after this long unused, and this long after sign-in in any case. */
  readonly sessionIdleSeconds: number;
  readonly sessionAbsoluteSeconds: number;
}

function identitySettings(env: NodeJS.ProcessEnv, mode: "embedded" | "cluster"): IdentitySettings {
  if (env.MEDIA_JWT_PUBLIC_KEY) {
    throw new ConfigError(
      "MEDIA_JWT_PUBLIC_KEY",
      "is replaced by MEDIA_OIDC_ISSUER, MEDIA_OIDC_CLIENT_ID and MEDIA_OIDC_CLIENT_SECRET (discovery and key sets)",
    );
  }
  const dev = env.MEDIA_DEV_ISSUER || (mode === "embedded" ? "on" : "off");
  if (dev !== "on" && dev !== "off") throw new ConfigError("MEDIA_DEV_ISSUER", `must be on or off, got "${dev}"`);
  if (dev === "on" && mode === "cluster")
    throw new ConfigError("MEDIA_DEV_ISSUER", "the development issuer is for the embedded mode only; a cluster signs in with MEDIA_OIDC_ISSUER");
  let oidc: OidcSettings | undefined;
  const issuer = env.MEDIA_OIDC_ISSUER;
  if (issuer) {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw new ConfigError("MEDIA_OIDC_ISSUER", `"${issuer}" is not a URL`);
    }
    const loopback = url.hostname === "127.0.0.1" || url.hostname === "[::1]" || url.hostname === "localhost";
    if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
      throw new ConfigError("MEDIA_OIDC_ISSUER", `must be an https:// URL (http:// only on a loopback address), got "${issuer}"`);
    }
    const clientId = env.MEDIA_OIDC_CLIENT_ID;
    if (!clientId) throw new ConfigError("MEDIA_OIDC_CLIENT_ID", "is required with MEDIA_OIDC_ISSUER");
    const clientSecret = env.MEDIA_OIDC_CLIENT_SECRET;
    if (!clientSecret) throw new ConfigError("MEDIA_OIDC_CLIENT_SECRET", "is required with MEDIA_OIDC_ISSUER");
    const extra = (env.MEDIA_OIDC_AUDIENCES ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    const verified = env.MEDIA_OIDC_REQUIRE_VERIFIED_EMAIL || "true";
    if (verified !== "true" && verified !== "false") throw new ConfigError("MEDIA_OIDC_REQUIRE_VERIFIED_EMAIL", `must be true or false, got "${verified}"`);
    oidc = {
      issuer,
      clientId,
      clientSecret,
      audiences: [clientId, ...extra],
      scopes: env.MEDIA_OIDC_SCOPES || "openid email profile",
      requireVerifiedEmail: verified === "true",
    };
  } else if (env.MEDIA_OIDC_CLIENT_ID || env.MEDIA_OIDC_CLIENT_SECRET) {
    throw new ConfigError("MEDIA_OIDC_ISSUER", "is required with MEDIA_OIDC_CLIENT_ID and MEDIA_OIDC_CLIENT_SECRET");
  }
  return {
    devIssuer: dev === "on" ? { issuer: env.MEDIA_JWT_ISSUER ?? "media-dev", audience: env.MEDIA_JWT_AUDIENCE ?? "media" } : undefined,
    oidc,
    clockSkewSeconds: integer(env, "MEDIA_OIDC_CLOCK_SKEW_SECONDS", 60, 0, 600),
    sessionIdleSeconds: integer(env, "MEDIA_SESSION_IDLE_SECONDS", 8 * 3600, 60, 30 * 86400),
    sessionAbsoluteSeconds: integer(env, "MEDIA_SESSION_ABSOLUTE_SECONDS", 7 * 86400, 60, 365 * 86400),
  };
}

/** MEDIA_PUBLIC_URL: an http(s) URL, a path prefix allowed, kept without a trailing slash. */
function publicUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.MEDIA_PUBLIC_URL;
  if (raw === undefined || raw === "") return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError("MEDIA_PUBLIC_URL", `"${raw}" is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new ConfigError("MEDIA_PUBLIC_URL", `must be an http:// or https:// URL, got "${raw}"`);
  if (url.search !== "" || url.hash !== "" || url.username !== "")
    throw new ConfigError("MEDIA_PUBLIC_URL", `must have no query, fragment or credentials, got "${raw}"`);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

/** A worker class from the machine's cores when the operator names none: up to 4 small, up to 16 standard, more large. */
export function defaultWorkerClass(cores: number): EncoderSettings["workerClass"] {
  if (cores <= 4) return "small";
  if (cores <= 16) return "standard";
  return "large";
}

function encoderSettings(env: NodeJS.ProcessEnv, mode: string): EncoderSettings {
  const workerClass = env.MEDIA_ENCODER_CLASS || defaultWorkerClass(os.availableParallelism());
  if (workerClass !== "small" && workerClass !== "standard" && workerClass !== "large")
    throw new ConfigError("MEDIA_ENCODER_CLASS", `must be small, standard or large, got "${workerClass}"`);
  // The embedded node keeps its name across restarts, so its first request hands back what its previous life held.
  const nodeId = env.MEDIA_ENCODER_ID || (mode === "embedded" ? "embedded" : `${os.hostname()}-${process.pid}`);
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(nodeId)) throw new ConfigError("MEDIA_ENCODER_ID", `"${nodeId}" must be 1 to 128 of A-Z a-z 0-9 . _ : -`);
  const progressive = env.MEDIA_ENCODER_PROGRESSIVE || "true";
  if (progressive !== "true" && progressive !== "false") throw new ConfigError("MEDIA_ENCODER_PROGRESSIVE", `must be true or false, got "${progressive}"`);
  return {
    workerClass,
    nodeId,
    leaseMs: integer(env, "MEDIA_ENCODE_LEASE_SECONDS", 30, 2, 3600) * 1000,
    // Embedded, the queue lives in the same process: a task handed back at once is taken again at the next start.
    drainMs: integer(env, "MEDIA_ENCODER_DRAIN_SECONDS", mode === "embedded" ? 0 : 300, 0, 86_400) * 1000,
    progressive: progressive === "true",
    // One node gains nothing from chunks: embedded, nothing is split.
    chunkSeconds: integer(env, "MEDIA_ENCODER_CHUNK_SECONDS", mode === "embedded" ? 0 : 60, 0, 3600),
  };
}

function sourceRetention(env: NodeJS.ProcessEnv): Config["sourceRetention"] {
  const daySeconds = integer(env, "MEDIA_SOURCE_RETENTION_DAY_SECONDS", 86_400, 1, 86_400);
  return { dayMs: daySeconds * 1000, sweepMs: Math.min(60_000, Math.max(500, daySeconds * 100)) };
}

function managedStorage(env: NodeJS.ProcessEnv): Config["managed"] {
  const bucket = env.MEDIA_MANAGED_S3_BUCKET;
  if (bucket === undefined || bucket === "")
    return { kind: "local", dir: path.resolve(env.MEDIA_MANAGED_DIR || path.join(env.MEDIA_DATA_DIR ?? "./data", "managed")) };
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new ConfigError("MEDIA_MANAGED_S3_BUCKET", `"${bucket}" is not a valid bucket name`);
  const accessKeyId = env.MEDIA_MANAGED_S3_ACCESS_KEY_ID ?? "";
  const secretAccessKey = secret(env, "MEDIA_MANAGED_S3_SECRET_ACCESS_KEY") ?? "";
  // Without keys the SDK finds its own (a pod's web identity, an instance role): nothing static to leak.
  if (accessKeyId === "" && secretAccessKey !== "")
    throw new ConfigError(
      "MEDIA_MANAGED_S3_ACCESS_KEY_ID",
      "is required with MEDIA_MANAGED_S3_SECRET_ACCESS_KEY (or set neither for the default credential chain)",
    );
  if (accessKeyId !== "" && secretAccessKey === "")
    throw new ConfigError(
      "MEDIA_MANAGED_S3_SECRET_ACCESS_KEY",
      "is required with MEDIA_MANAGED_S3_ACCESS_KEY_ID (or set neither for the default credential chain)",
    );
  return {
    kind: "s3",
    bucket,
    endpoint: endpoint(env, "MEDIA_MANAGED_S3_ENDPOINT"),
    region: env.MEDIA_MANAGED_S3_REGION || "us-east-1",
    keys: accessKeyId === "" ? undefined : { accessKeyId, secretAccessKey },
  };
}

/** An http(s) URL without path, query or credentials, kept without a trailing slash. */
function endpoint(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `"${raw}" is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new ConfigError(name, `must be an http:// or https:// URL, got "${raw}"`);
  if (url.pathname !== "/" || url.search !== "" || url.username !== "") throw new ConfigError(name, `must be scheme://host[:port] only, got "${raw}"`);
  return url.origin;
}

function netSettings(env: NodeJS.ProcessEnv): Config["net"] {
  const allow = (env.MEDIA_NET_ALLOW ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const entry of allow) {
    if (!parseAllowEntry(entry)) throw new ConfigError("MEDIA_NET_ALLOW", `"${entry}" is neither a CIDR (10.0.0.0/8, ::1/128), an IP address nor a host name`);
  }
  let tlsCaFile: string | undefined;
  if (env.MEDIA_TLS_CA_FILE) {
    tlsCaFile = path.resolve(env.MEDIA_TLS_CA_FILE);
    let pem: string;
    try {
      pem = readFileSync(tlsCaFile, "utf8");
    } catch (e) {
      throw new ConfigError("MEDIA_TLS_CA_FILE", `cannot read ${tlsCaFile}: ${(e as Error).message}`);
    }
    if (!pem.includes("-----BEGIN CERTIFICATE-----")) throw new ConfigError("MEDIA_TLS_CA_FILE", `${tlsCaFile} holds no PEM certificate`);
  }
  return { allow, tlsCaFile };
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: "on" | "off"): boolean {
  const raw = env[name] || fallback;
  if (raw !== "on" && raw !== "off") throw new ConfigError(name, `must be on or off, got "${raw}"`);
  return raw === "on";
}

/** A readable PEM file holding a `what` ("CERTIFICATE", "PRIVATE KEY"), as an absolute path. */
function pemFile(env: NodeJS.ProcessEnv, name: string, what: "CERTIFICATE" | "PRIVATE KEY"): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const file = path.resolve(raw);
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(name, `cannot read ${file}: ${(e as Error).message}`);
  }
  // "PRIVATE KEY" also matches the RSA and EC forms' "-----BEGIN RSA PRIVATE KEY-----".
  if (!new RegExp(`-----BEGIN [A-Z ]*${what}-----`).test(pem)) throw new ConfigError(name, `${file} holds no PEM ${what.toLowerCase()}`);
  return file;
}

/** A secret from NAME, or from the file NAME_FILE names (a mounted secret; one trailing newline dropped); not both. */
function secret(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const fileName = `${name}_FILE`;
  const value = env[name];
  const file = env[fileName];
  if (value && file) throw new ConfigError(fileName, `and ${name} are both set; set one`);
  if (!file) return value || undefined;
  let text: string;
  try {
    text = readFileSync(path.resolve(file), "utf8");
  } catch (e) {
    throw new ConfigError(fileName, `cannot read ${path.resolve(file)}: ${(e as Error).message}`);
  }
  text = text.replace(/\r?\n$/, "");
  if (text === "") throw new ConfigError(fileName, `${path.resolve(file)} is empty`);
  return text;
}

/** <prefix>_SSL and its files; the files without TLS on are a mistake, not a no-op. */
function tlsFiles(env: NodeJS.ProcessEnv, prefix: string): TlsFiles | undefined {
  const on = onOff(env, `${prefix}_SSL`, "off");
  const files = {
    caFile: pemFile(env, `${prefix}_SSL_CA_FILE`, "CERTIFICATE"),
    certFile: pemFile(env, `${prefix}_SSL_CERT_FILE`, "CERTIFICATE"),
    keyFile: pemFile(env, `${prefix}_SSL_KEY_FILE`, "PRIVATE KEY"),
  };
  const named = Object.entries({ CA_FILE: files.caFile, CERT_FILE: files.certFile, KEY_FILE: files.keyFile }).find(([, v]) => v !== undefined);
  if (!on) {
    if (named) throw new ConfigError(`${prefix}_SSL_${named[0]}`, `is set but ${prefix}_SSL is off; set ${prefix}_SSL=on`);
    return undefined;
  }
  if (files.certFile && !files.keyFile) throw new ConfigError(`${prefix}_SSL_KEY_FILE`, `is required with ${prefix}_SSL_CERT_FILE`);
  if (files.keyFile && !files.certFile) throw new ConfigError(`${prefix}_SSL_CERT_FILE`, `is required with ${prefix}_SSL_KEY_FILE`);
  return files;
}

const SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"] as const;

function kafkaSasl(env: NodeJS.ProcessEnv): KafkaSasl | undefined {
  const raw = (env.MEDIA_KAFKA_SASL_MECHANISM ?? "").toLowerCase();
  const username = env.MEDIA_KAFKA_SASL_USERNAME ?? "";
  const password = secret(env, "MEDIA_KAFKA_SASL_PASSWORD");
  if (raw === "") {
    if (username !== "" || password !== undefined)
      throw new ConfigError("MEDIA_KAFKA_SASL_MECHANISM", `is required with MEDIA_KAFKA_SASL_USERNAME and _PASSWORD (${SASL_MECHANISMS.join(", ")})`);
    return undefined;
  }
  const mechanism = SASL_MECHANISMS.find((m) => m === raw);
  if (!mechanism) throw new ConfigError("MEDIA_KAFKA_SASL_MECHANISM", `must be ${SASL_MECHANISMS.join(", ")}, got "${env.MEDIA_KAFKA_SASL_MECHANISM}"`);
  if (username === "") throw new ConfigError("MEDIA_KAFKA_SASL_USERNAME", `is required with MEDIA_KAFKA_SASL_MECHANISM=${mechanism}`);
  if (password === undefined)
    throw new ConfigError("MEDIA_KAFKA_SASL_PASSWORD", `(or MEDIA_KAFKA_SASL_PASSWORD_FILE) is required with MEDIA_KAFKA_SASL_MECHANISM=${mechanism}`);
  return { mechanism, username, password };
}

/** How this deployment reaches Kafka and Cassandra (MEDIA_KAFKA_*, MEDIA_CASSANDRA_*, MEDIA_COMMAND_PARTITIONS). */
export function clusterConfig(env: NodeJS.ProcessEnv = process.env): ClusterConfig {
  const list = (name: string, fallback: string) => {
    const items = (env[name] || fallback)
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    if (items.some((i) => !/^[A-Za-z0-9.:[\]_-]+$/.test(i))) throw new ConfigError(name, `must be a comma-separated list of host:port, got "${env[name]}"`);
    return items;
  };
  const keyspace = env.MEDIA_CASSANDRA_KEYSPACE || "media";
  if (!/^[a-z][a-z0-9_]{0,47}$/.test(keyspace)) throw new ConfigError("MEDIA_CASSANDRA_KEYSPACE", `"${keyspace}" is not a valid keyspace name`);
  // Deployments sharing a broker must not serve each other's commands.
  const topicPrefix = env.MEDIA_KAFKA_TOPIC_PREFIX || `media.${keyspace}`;
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(topicPrefix)) throw new ConfigError("MEDIA_KAFKA_TOPIC_PREFIX", `"${topicPrefix}" is not a valid topic name prefix`);
  const createSchema = env.MEDIA_CASSANDRA_CREATE_SCHEMA || "true";
  if (createSchema !== "true" && createSchema !== "false") throw new ConfigError("MEDIA_CASSANDRA_CREATE_SCHEMA", `must be true or false`);
  const cassandraUsername = env.MEDIA_CASSANDRA_USERNAME || undefined;
  const cassandraPassword = secret(env, "MEDIA_CASSANDRA_PASSWORD");
  if (cassandraPassword !== undefined && cassandraUsername === undefined)
    throw new ConfigError("MEDIA_CASSANDRA_USERNAME", "is required with MEDIA_CASSANDRA_PASSWORD");
  const cassandraTls = tlsFiles(env, "MEDIA_CASSANDRA");
  const kafkaTls = tlsFiles(env, "MEDIA_KAFKA");
  const verifyHostname = onOff(env, "MEDIA_CASSANDRA_SSL_HOSTNAME_VERIFICATION", "on");
  return {
    kafkaBrokers: list("MEDIA_KAFKA_BROKERS", "127.0.0.1:9092"),
    topicPrefix,
    commandPartitions: integer(env, "MEDIA_COMMAND_PARTITIONS", 12, 1, 1000),
    kafkaLingerMs: integer(env, "MEDIA_KAFKA_LINGER_MS", 0, 0, 100),
    directCommands: directCommands(env, kafkaTls !== undefined),
    kafkaTls,
    kafkaSasl: kafkaSasl(env),
    cassandraContactPoints: list("MEDIA_CASSANDRA_CONTACT_POINTS", "127.0.0.1:9042"),
    cassandraLocalDataCenter: env.MEDIA_CASSANDRA_LOCAL_DC || "datacenter1",
    cassandraKeyspace: keyspace,
    cassandraReplication: env.MEDIA_CASSANDRA_REPLICATION || "{'class':'SimpleStrategy','replication_factor':1}",
    cassandraUsername,
    cassandraPassword,
    cassandraTls: cassandraTls && { ...cassandraTls, verifyHostname },
    cassandraCreateSchema: createSchema === "true",
  };
}

/**
 * Direct commands: on by default, except beside TLS to Kafka (the link is plain TCP, authenticated
 * by the server secret but not encrypted: where commands must be encrypted, it is asked for by name).
 */
function directCommands(env: NodeJS.ProcessEnv, kafkaTls: boolean): DirectCommands | undefined {
  if (!onOff(env, "MEDIA_DIRECT_COMMANDS", kafkaTls ? "off" : "on")) return undefined;
  const listen = (env.MEDIA_DIRECT_COMMANDS_LISTEN || "0.0.0.0:0").trim();
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new ConfigError("MEDIA_DIRECT_COMMANDS_LISTEN", `must be host:port (port 0 for any free one), got "${listen}"`);
  const listenHost = m[1]!.replace(/^\[|\]$/g, "");
  const advertise = (env.MEDIA_DIRECT_COMMANDS_ADVERTISE || "").trim();
  if (advertise !== "" && !/^[A-Za-z0-9.:-]{1,253}$/.test(advertise))
    throw new ConfigError("MEDIA_DIRECT_COMMANDS_ADVERTISE", `must be a host name or IP address, got "${advertise}"`);
  return { listenHost, listenPort: port, advertiseHost: advertise || defaultAdvertiseHost(listenHost) };
}

/** The listen host when it is one address; else this machine's first non-loopback IPv4, else loopback. */
function defaultAdvertiseHost(listenHost: string): string {
  if (listenHost !== "0.0.0.0" && listenHost !== "::") return listenHost;
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return "127.0.0.1";
}

function retryScale(env: NodeJS.ProcessEnv): number {
  const raw = env.MEDIA_WEBHOOK_RETRY_SCALE;
  if (raw === undefined || raw === "") return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > 1) throw new ConfigError("MEDIA_WEBHOOK_RETRY_SCALE", `must be a number in (0, 1], got "${raw}"`);
  return value;
}

const WINDOWS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600 };

/** "200/s,burst=400" (also /m, /h; burst defaults to the quota); "0" or "off" switches the limit off. */
function ratePolicy(env: NodeJS.ProcessEnv, name: string, fallback: string): RatePolicy | undefined {
  const raw = (env[name] || fallback).trim();
  if (raw === "0" || raw.toLowerCase() === "off") return undefined;
  const m = /^(\d{1,7})\s*\/\s*([smh])\s*(?:,\s*burst\s*=\s*(\d{1,8}))?$/.exec(raw);
  if (!m) throw new ConfigError(name, `must look like "200/s,burst=400" (per s, m or h; burst optional) or 0 for off, got "${raw}"`);
  const quota = Number(m[1]);
  const burst = m[3] === undefined ? quota : Number(m[3]);
  if (quota < 1 || burst < 1) throw new ConfigError(name, `quota and burst must be at least 1 (0 alone switches the limit off), got "${raw}"`);
  return Object.freeze({ quota, windowSeconds: WINDOWS[m[2]!]!, burst });
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const logLevel = env.MEDIA_LOG_LEVEL ?? "info";
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new ConfigError("MEDIA_LOG_LEVEL", `unknown level "${logLevel}"`);
  }
  const secret = env.MEDIA_SERVER_SECRET;
  if (secret !== undefined && secret.length < 32) {
    throw new ConfigError("MEDIA_SERVER_SECRET", "must be at least 32 characters");
  }
  const mode = env.MEDIA_MODE || "embedded";
  if (mode !== "embedded" && mode !== "cluster") throw new ConfigError("MEDIA_MODE", `must be "embedded" or "cluster", got "${mode}"`);
  // Every process of a cluster must sign cursors and hash keys alike.
  if (mode === "cluster" && secret === undefined && env.MEDIA_DATA_DIR === undefined) {
    throw new ConfigError("MEDIA_SERVER_SECRET", "is required in cluster mode (or a MEDIA_DATA_DIR shared by every process)");
  }
  const cluster = clusterConfig(env);
  const httpServer = env.MEDIA_HTTP_SERVER || "uws";
  if (httpServer !== "uws" && httpServer !== "node") {
    throw new ConfigError("MEDIA_HTTP_SERVER", `must be "uws" or "node", got "${httpServer}"`);
  }
  const bootstrapEmail = (env.MEDIA_BOOTSTRAP_EMAIL ?? "owner@media.local").toLowerCase();
  if (!/^[^@\s]+@[^@\s]+$/.test(bootstrapEmail)) throw new ConfigError("MEDIA_BOOTSTRAP_EMAIL", `"${bootstrapEmail}" is not an email address`);
  const config: Config = {
    mode,
    cluster,
    httpPort: integer(env, "MEDIA_HTTP_PORT", 8080, 0, 65535),
    httpHost: env.MEDIA_HTTP_HOST ?? "0.0.0.0",
    metricsPort: env.MEDIA_METRICS_PORT ? integer(env, "MEDIA_METRICS_PORT", 0, 0, 65535) : undefined,
    httpServer,
    dataDir: path.resolve(env.MEDIA_DATA_DIR ?? "./data"),
    maxRequestBytes: integer(env, "MEDIA_MAX_REQUEST_BYTES", 4 * 1024 * 1024, 1024, 64 * 1024 * 1024),
    watchStallMs: integer(env, "MEDIA_WATCH_STALL_SECONDS", 60, 1, 3600) * 1000,
    drainDelayMs: integer(env, "MEDIA_DRAIN_DELAY_SECONDS", mode === "cluster" ? 5 : 0, 0, 300) * 1000,
    corsOrigins: corsOrigins(env),
    serverSecret: secret,
    identity: identitySettings(env, mode),
    bootstrapEmail,
    // Staff default to the bootstrap owner, so an embedded install can approve its first sign-ups.
    staffEmails: (env.MEDIA_STAFF_EMAILS ?? bootstrapEmail)
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s !== ""),
    logLevel,
    version: VERSION,
    net: netSettings(env),
    webhooks: { timeoutMs: integer(env, "MEDIA_WEBHOOK_TIMEOUT_MS", 10_000, 100, 60_000), retryScale: retryScale(env) },
    storage: { s3Endpoint: endpoint(env, "MEDIA_S3_ENDPOINT"), gcsApiEndpoint: endpoint(env, "MEDIA_GCS_API_ENDPOINT") },
    publicUrl: publicUrl(env),
    managed: managedStorage(env),
    sourceRetention: sourceRetention(env),
    encoder: encoderSettings(env, mode),
    tracing: tracingSettings(env),
    rateLimits: Object.freeze({
      key: ratePolicy(env, "MEDIA_RATE_LIMIT_KEY", "200/s,burst=400"),
      anonymous: ratePolicy(env, "MEDIA_RATE_LIMIT_ANONYMOUS", "20/s,burst=60"),
      health: ratePolicy(env, "MEDIA_RATE_LIMIT_HEALTH", "50/s,burst=100"),
      signIn: ratePolicy(env, "MEDIA_RATE_LIMIT_SIGN_IN", "30/m,burst=30"),
      signInAccount: ratePolicy(env, "MEDIA_RATE_LIMIT_SIGN_IN_ACCOUNT", "10/m,burst=10"),
    }),
  };
  return Object.freeze(config);
}
