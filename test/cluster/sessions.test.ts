// Sessions live in the store, so every gateway of a cluster honours them: a session begun on one
// gateway (a one-time link, spent once across the cluster) is accepted by the other, and signing
// out on either ends it on both. The development issuer is refused in cluster mode.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchCluster, type LocalCluster } from "../../main/launcher.js";
import { loadConfig } from "../../src/config.js";
import { SecretBox } from "../../src/secrets.js";
import { mintSignInLink } from "../../src/sessions.js";
import { clusterEnv, dropKeyspace, freePort, freshKeyspace, readBootstrap, tempDataDir } from "../harness.js";

const keyspace = freshKeyspace();
const dataDir = tempDataDir();
const env = clusterEnv(dataDir, keyspace, { MEDIA_COMMAND_PARTITIONS: "2" });
let cluster: LocalCluster;
let a: string;
let b: string;

beforeAll(async () => {
  const basePort = freePort();
  freePort();
  cluster = await launchCluster({ gateways: 2, actorHosts: 1, encoderNodes: 0, basePort, env });
  [a, b] = cluster.gateways.map((g) => `http://127.0.0.1:${g.port}`) as [string, string];
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  await dropKeyspace(keyspace);
});

/** A Connect call as the service's own pages make it: the cookie, their Origin and the client header. */
const getMe = (base: string, cookie: string) =>
  fetch(`${base}/media.v1.UserService/GetMe`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie, origin: base, "x-media-client": "console" },
    body: "{}",
  });

describe("sessions across gateways", () => {
  it("a session begun on one gateway is accepted by the other, and a sign-out on either ends it on both", async () => {
    const boot = readBootstrap(dataDir);
    const box = new SecretBox(readFileSync(path.join(dataDir, "server-secret"), "utf8").trim());
    const link = mintSignInLink(box, boot.user_email);
    const signIn = (base: string) => fetch(`${base}/auth/link/${link}`, { method: "POST", headers: { origin: base }, redirect: "manual" });

    const first = await signIn(a);
    expect(first.status).toBe(303);
    const cookie = /^(media_session=[A-Za-z0-9]+);/.exec(first.headers.get("set-cookie") ?? "")?.[1];
    expect(cookie).toBeDefined();
    // The link is spent for the whole cluster.
    const again = await signIn(b);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("already used");

    for (const base of [a, b]) {
      const me = await getMe(base, cookie!);
      expect(me.status).toBe(200);
      expect(((await me.json()) as { user: { user: { email: string } } }).user.user.email).toBe(boot.user_email);
    }
    const out = await fetch(`${b}/auth/logout`, { method: "POST", headers: { cookie: cookie!, origin: b }, redirect: "manual" });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/^media_session=; .*Max-Age=0/);
    expect((await getMe(a, cookie!)).status).toBe(401);
    expect((await getMe(b, cookie!)).status).toBe(401);
  });

  it("refuses the development issuer in cluster mode", () => {
    expect(() => loadConfig({ ...env, MEDIA_DEV_ISSUER: "on" })).toThrow(/embedded mode only/);
    expect(loadConfig(env).identity.devIssuer).toBeUndefined();
  });
});
