// Bad configuration in cluster mode: each role (`serve`, `gateway`, `actor-host`, as
// `node bin/media.js <role>`) stops with exit code 2 and one line naming the setting at fault —
// unreachable broker, missing keyspace, unreachable Cassandra, wrong credentials, malformed
// settings. Then the health check of a running cluster while Kafka is stopped and started again:
// it reports the bus as the unhealthy component, and recovers.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchCluster, type LocalCluster } from "../../main/launcher.js";
import { CassandraStore } from "../../src/store/cassandra-store.js";
import { call, freePort, freshKeyspace, readBootstrap, ROOT, tempDataDir, clusterEnv, dropKeyspace } from "../harness.js";
import { cassandraContactPoint, cassandraPeer, kafkaBrokers } from "./endpoints.js";
import { kafkaDown, kafkaRunning, kafkaUp } from "./kafka-service.js";
import { runMedia, type Exit } from "./run-media.js";

const CASSANDRA = cassandraContactPoint();
const keyspace = freshKeyspace();
const dataDir = tempDataDir();
const ROLES = ["serve", "gateway", "actor-host"] as const;
type Role = (typeof ROLES)[number];

/**
 * The environment without the runner's own MEDIA_* settings, so each case sets exactly what it tests;
 * but with the password the test peers ask of every client (test/cluster/secure-peers.ts).
 */
const baseEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MEDIA_"))),
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k === "MEDIA_CASSANDRA_USERNAME" || k === "MEDIA_CASSANDRA_PASSWORD")),
};

/** `node bin/media.js <role>` (cluster mode, default log level) until it exits; killed after timeoutMs. */
function runRole(role: Role, env: Record<string, string>, timeoutMs = 45_000): Promise<Exit> {
  return runMedia(
    role,
    {
      ...baseEnv,
      MEDIA_MODE: "cluster",
      MEDIA_DATA_DIR: dataDir,
      MEDIA_HTTP_HOST: "127.0.0.1",
      MEDIA_HTTP_PORT: String(freePort()),
      MEDIA_KAFKA_BROKERS: kafkaBrokers().join(","),
      MEDIA_CASSANDRA_CONTACT_POINTS: CASSANDRA,
      MEDIA_CASSANDRA_KEYSPACE: keyspace,
      ...env,
    },
    timeoutMs,
  );
}

/**
 * A stand-in Cassandra node that asks for a password and refuses every credential, whoever runs the
 * test peers (the containers' node never checks credentials; the local one's wrong password is
 * tested in secure-peers.test.ts). This speaks just enough of the native protocol
 * (OPTIONS → SUPPORTED, STARTUP → AUTHENTICATE, AUTH_RESPONSE → ERROR 0x0100 "bad credentials")
 * for the real driver to fail the way it fails against a real node with wrong credentials.
 */
async function refusingCassandra(): Promise<{ port: number; close(): Promise<void> }> {
  const text = (s: string) => {
    const b = Buffer.from(s);
    const n = Buffer.alloc(2);
    n.writeUInt16BE(b.length);
    return Buffer.concat([n, b]);
  };
  const frame = (version: number, stream: number, opcode: number, body: Buffer) => {
    const h = Buffer.alloc(9);
    h.writeUInt8(0x80 | version, 0);
    h.writeInt16BE(stream, 2);
    h.writeUInt8(opcode, 4);
    h.writeUInt32BE(body.length, 5);
    return Buffer.concat([h, body]);
  };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    let pending = Buffer.alloc(0);
    socket.on("data", (d) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 9 && pending.length >= 9 + pending.readUInt32BE(5)) {
        const version = pending.readUInt8(0) & 0x7f;
        const stream = pending.readInt16BE(2);
        const opcode = pending.readUInt8(4);
        pending = pending.subarray(9 + pending.readUInt32BE(5));
        if (opcode === 0x05) socket.write(frame(version, stream, 0x06, Buffer.from([0, 0])));
        else if (opcode === 0x01) socket.write(frame(version, stream, 0x03, text("org.apache.cassandra.auth.PasswordAuthenticator")));
        else if (opcode === 0x0f) {
          const code = Buffer.alloc(4);
          code.writeInt32BE(0x0100);
          socket.write(frame(version, stream, 0x00, Buffer.concat([code, text("Provided username and/or password are incorrect")])));
        } else socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

let fakeCassandra: Awaited<ReturnType<typeof refusingCassandra>> | undefined;

beforeAll(async () => {
  // The schema once, before processes that would otherwise all apply it to the empty keyspace at once.
  const store = new CassandraStore({ ...cassandraPeer(), keyspace });
  await store.open();
  await store.close();
  fakeCassandra = await refusingCassandra();
}, 120_000);

afterAll(async () => {
  await fakeCassandra?.close();
  await dropKeyspace(keyspace);
}, 120_000);

interface Case {
  readonly name: string;
  readonly setting: string;
  readonly env: () => Record<string, string>;
  /** What the one line must also say. */
  readonly says?: RegExp;
  readonly roles?: readonly Role[];
}

const CASES: Case[] = [
  { name: "unreachable broker", setting: "MEDIA_KAFKA_BROKERS", env: () => ({ MEDIA_KAFKA_BROKERS: "127.0.0.1:1" }), says: /127\.0\.0\.1:1/ },
  {
    name: "missing keyspace, schema creation off",
    setting: "MEDIA_CASSANDRA_KEYSPACE",
    env: () => ({ MEDIA_CASSANDRA_KEYSPACE: `${keyspace}_absent`, MEDIA_CASSANDRA_CREATE_SCHEMA: "false" }),
    says: new RegExp(`${keyspace}_absent.*does not exist`),
  },
  {
    name: "unreachable Cassandra",
    setting: "MEDIA_CASSANDRA_CONTACT_POINTS",
    env: () => ({ MEDIA_CASSANDRA_CONTACT_POINTS: "127.0.0.1:1" }),
    says: /127\.0\.0\.1:1/,
  },
  {
    name: "wrong Cassandra credentials",
    setting: "MEDIA_CASSANDRA_USERNAME",
    env: () => ({ MEDIA_CASSANDRA_CONTACT_POINTS: `127.0.0.1:${fakeCassandra!.port}`, MEDIA_CASSANDRA_USERNAME: "media", MEDIA_CASSANDRA_PASSWORD: "wrong" }),
    says: /MEDIA_CASSANDRA_PASSWORD.*incorrect/,
  },
  {
    name: "Cassandra asks for credentials and none are set",
    setting: "MEDIA_CASSANDRA_USERNAME",
    env: () => ({ MEDIA_CASSANDRA_CONTACT_POINTS: `127.0.0.1:${fakeCassandra!.port}`, MEDIA_CASSANDRA_USERNAME: "", MEDIA_CASSANDRA_PASSWORD: "" }),
  },
  { name: "unknown mode", setting: "MEDIA_MODE", env: () => ({ MEDIA_MODE: "bogus" }), says: /bogus/ },
  { name: "a role outside cluster mode", setting: "MEDIA_MODE", env: () => ({ MEDIA_MODE: "embedded" }), roles: ["gateway", "actor-host"] },
  { name: "partitions not a number", setting: "MEDIA_COMMAND_PARTITIONS", env: () => ({ MEDIA_COMMAND_PARTITIONS: "abc" }), says: /abc/ },
  { name: "linger past 100 ms", setting: "MEDIA_KAFKA_LINGER_MS", env: () => ({ MEDIA_KAFKA_LINGER_MS: "250" }), says: /between 0 and 100/ },
  { name: "the development issuer in a cluster", setting: "MEDIA_DEV_ISSUER", env: () => ({ MEDIA_DEV_ISSUER: "on" }), says: /embedded mode only/ },
  {
    name: "the static key of old",
    setting: "MEDIA_JWT_PUBLIC_KEY",
    env: () => ({ MEDIA_JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----" }),
    says: /MEDIA_OIDC_ISSUER/,
  },
  {
    name: "a provider over plain http elsewhere than loopback",
    setting: "MEDIA_OIDC_ISSUER",
    env: () => ({ MEDIA_OIDC_ISSUER: "http://id.example.com", MEDIA_OIDC_CLIENT_ID: "media", MEDIA_OIDC_CLIENT_SECRET: "s" }),
    says: /https/,
  },
  { name: "a client id without a provider", setting: "MEDIA_OIDC_ISSUER", env: () => ({ MEDIA_OIDC_CLIENT_ID: "media" }) },
];

describe("bad configuration stops the process with one line naming the setting", () => {
  for (const c of CASES) {
    it(`${c.name} → ${c.setting}`, async () => {
      const roles = c.roles ?? ROLES;
      const exits = await Promise.all(roles.map((role) => runRole(role, c.env())));
      roles.forEach((role, i) => {
        const exit = exits[i]!;
        const lines = exit.output.split("\n").filter((l) => l.trim() !== "");
        expect({ role, code: exit.code, signal: exit.signal, lines: lines.length }, exit.output).toEqual({ role, code: 2, signal: null, lines: 1 });
        expect(lines[0]).toMatch(new RegExp(`^media: bad configuration: ${c.setting}: \\S`));
        if (c.says) expect(lines[0]).toMatch(c.says);
        // Fails fast: no retry loop that outlasts a supervisor's patience.
        expect(exit.ms, `${role} took ${exit.ms} ms`).toBeLessThan(30_000);
      });
    }, 60_000);
  }
});

// ---- health while Kafka is down ----

// infra/kafka.sh down/up, or the container's stop/start (test/cluster/kafka-service.ts).
const kafka = (command: "up" | "down") => (command === "up" ? kafkaUp() : kafkaDown());

async function poll<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return { value, ms: Date.now() - t0 };
    } catch (e) {
      last = e;
    }
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (last error: ${String(last)})` : ""}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("health check", () => {
  let cluster: LocalCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it("reports the bus unhealthy while Kafka is down, and healthy again once it is back", async () => {
    // Commands by Kafka only: a gateway that knows the owning host sends them over the direct link,
    // which Kafka's absence does not stop (the next test); which partitions it knows is chance here.
    const env = { ...clusterEnv(dataDir, keyspace), MEDIA_DIRECT_COMMANDS: "off" };
    cluster = await launchCluster({ gateways: 1, actorHosts: 1, encoderNodes: 1, basePort: freePort(), env });
    const base = `http://127.0.0.1:${cluster.gateways[0]!.port}`;
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };
    const healthy = {
      status: "healthy",
      version: expect.any(String),
      components: [
        { name: "database", status: "healthy" },
        { name: "bus", status: "healthy" },
        { name: "encoders", status: "healthy" },
      ],
    };
    // The encoder pool is healthy once the node has asked the queue for work.
    await poll("the encoder pool seen", 30_000, async () => ((await call(base, "HealthService/Check", {})).body?.status === "healthy" ? true : undefined));
    expect((await call(base, "HealthService/Check", {})).body).toEqual(healthy);
    const before = await call(base, "APIKeyService/Create", { name: "before" }, auth);
    expect(before.status, JSON.stringify(before.body) + cluster.gateways[0]!.output()).toBe(200);

    const timings: string[] = [];
    try {
      let t0 = Date.now();
      await kafka("down");
      timings.push(`kafka down ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const down = await poll("bus reported unhealthy", 30_000, async () => {
        const r = await call(base, "HealthService/Check", {});
        return r.status === 200 && r.body.status === "unhealthy" ? r.body : undefined;
      });
      timings.push(`unhealthy reported after ${(down.ms / 1000).toFixed(1)} s (bus: "${down.value.components?.find((c: any) => c.name === "bus")?.message}")`);
      expect(down.value).toEqual({
        status: "unhealthy",
        version: expect.any(String),
        components: [
          { name: "database", status: "healthy" },
          { name: "bus", status: "unhealthy", message: expect.stringMatching(/\S/) },
          // The node cannot reach the queue either: it drops out of the pool 30 s after it was last heard from.
          expect.objectContaining({ name: "encoders" }),
        ],
      });
      // A command cannot go through; the gateway says so rather than hanging. (It waits 15 s for
      // a reply, but only once the publish itself gave up — kafkajs's retries — hence the bound.)
      t0 = Date.now();
      const refused = await call(base, "APIKeyService/Create", { name: "while-down" }, { ...auth, headers: { "idempotency-key": "health-while-down" } });
      const refusedMs = Date.now() - t0;
      timings.push(`create while down: ${refused.status} ${refused.body?.code} in ${(refusedMs / 1000).toFixed(1)} s`);
      expect(refused.status).toBe(503);
      expect(refused.body.code).toBe("unavailable");
      expect(refusedMs).toBeLessThan(30_000);
      // Reads from the store still work.
      expect((await call(base, "APIKeyService/List", {}, auth)).status).toBe(200);

      t0 = Date.now();
      await kafka("up");
      timings.push(`kafka up ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const back = await poll("healthy again", 60_000, async () => {
        const r = await call(base, "HealthService/Check", {});
        return r.body?.status === "healthy" ? r.body : undefined;
      });
      timings.push(`healthy again after ${(back.ms / 1000).toFixed(1)} s`);
      expect(back.value).toEqual(healthy);
      // And commands flow again: the same request, retried until it is acknowledged.
      const created = await poll("create after recovery", 90_000, async () => {
        const r = await call(base, "APIKeyService/Create", { name: "while-down" }, { ...auth, headers: { "idempotency-key": "health-while-down" } });
        return r.status === 200 ? r.body : undefined;
      });
      timings.push(`commands flow again after ${(created.ms / 1000).toFixed(1)} s`);
      expect(created.value.api_key.name).toBe("while-down");
      expect(cluster.gateways[0]!.child.exitCode).toBeNull();
      expect(cluster.actorHosts[0]!.child.exitCode).toBeNull();
    } finally {
      // Other suites need Kafka, whatever happened here.
      if (!(await kafkaRunning())) await kafka("up");
      console.log(`health: ${timings.join("; ")}`);
    }
  }, 300_000);
});

describe("direct commands while Kafka is down", () => {
  const ownKeyspace = freshKeyspace();
  const ownDataDir = tempDataDir();
  let cluster: LocalCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
    await dropKeyspace(ownKeyspace);
  }, 60_000);

  it("a gateway that knows the entity's host keeps serving its commands over the direct link", async () => {
    cluster = await launchCluster({ gateways: 1, actorHosts: 1, basePort: freePort(), env: clusterEnv(ownDataDir, ownKeyspace) });
    const base = `http://127.0.0.1:${cluster.gateways[0]!.port}`;
    const boot = readBootstrap(ownDataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };
    // The bus component alone: with no encoder node here, the overall status stays unhealthy.
    const busStatus = async (): Promise<string | undefined> =>
      (await call(base, "HealthService/Check", {})).body?.components?.find((c: { name: string }) => c.name === "bus")?.status;
    // The create's reply, by Kafka or by the link, leaves the gateway knowing the host of its partition.
    const created = await call(base, "APIKeyService/Create", { name: "known" }, auth);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.api_key.id as string;
    try {
      await kafka("down");
      await poll("bus reported unhealthy", 30_000, async () => ((await busStatus()) === "unhealthy" ? true : undefined));
      const revoked = await call(base, "APIKeyService/Revoke", { id }, auth);
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      expect(revoked.body.api_key).toMatchObject({ id, is_revoked: true });
      expect((await call(base, "APIKeyService/Get", { id }, auth)).body.api_key).toMatchObject({ id, is_revoked: true });
      expect(cluster.actorHosts[0]!.child.exitCode).toBeNull();
    } finally {
      if (!(await kafkaRunning())) await kafka("up");
    }
    await poll("the bus healthy again", 60_000, async () => ((await busStatus()) === "healthy" ? true : undefined));
  }, 300_000);
});
