// The front door under hostile input, on both hosts (uWS and node:http): decompression bombs,
// broken and unknown encodings, timeouts, methods and CORS, answered in the protocol's framing
// before anything authenticates; and streams that flow message by message.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { gzipSync } from "node:zlib";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { EdgeRouter } from "../../gateway/edge.js";
import { CLIENT_ADDRESS } from "../../gateway/front.js";
import { listenNodeHttp } from "../../gateway/node-http.js";
import { listenUws, type HostOptions, type HostServer } from "../../gateway/uws.js";
import { envelope } from "../../gateway/wire-errors.js";
import { createContextValues } from "@connectrpc/connect";
import { freePort, readBootstrap, spawnServer, tempDataDir, TARGET, type ChildServer } from "../harness.js";

const MiB = 1024 * 1024;
/** 512 MiB of zeros as 512 gzip members of 1 MiB each: about half a megabyte on the wire. */
const BOMB = new Uint8Array(Buffer.concat(Array.from({ length: 512 }, () => gzipSync(Buffer.alloc(MiB)))));

/** Resident memory of a process, in bytes. */
function rss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

/** A raw HTTP/1.1 exchange, for methods and headers fetch refuses to send. */
function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Uint8Array,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers, timeout: 5000 }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("timeout", () => req.destroy(new Error(`no answer to ${method} ${path} in 5 s`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** Bytes written as they are on a plain TCP connection; the answer read until the server closes. */
function socket(base: string, text: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    let answer = "";
    const s = connect(Number(port), hostname, () => s.end(text));
    s.setTimeout(5000, () => s.destroy(new Error(`no answer in 5 s to ${JSON.stringify(text.slice(0, 40))}`)));
    s.on("data", (d) => (answer += d));
    s.on("close", () => resolve(answer));
    s.on("error", reject);
  });
}

const json = { "content-type": "application/json" };

describe.skipIf(TARGET === "cluster").each(["uws", "node"] as const)("front door on %s", (host) => {
  let server: ChildServer;

  beforeAll(async () => {
    server = await spawnServer(tempDataDir(), freePort(), {
      MEDIA_HTTP_SERVER: host,
      MEDIA_CORS_ORIGINS: "https://app.example.com",
      MEDIA_RATE_LIMIT_ANONYMOUS: "off",
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("50 gzip bombs in parallel, without credentials: each resource_exhausted, memory barely moves, still healthy", async () => {
    const pid = server.child.pid!;
    const fifty = (body: Uint8Array<ArrayBuffer>) =>
      Promise.all(
        Array.from({ length: 50 }, () =>
          fetch(`${server.base}/media.v1.APIKeyService/List`, { method: "POST", headers: { ...json, "content-encoding": "gzip" }, body }).then(async (r) => ({
            status: r.status,
            body: await r.json(),
          })),
        ),
      );
    // The same traffic without the bomb first (as large on the wire, inflating to as much), so what
    // is measured is what the bombs cost, not the heap's first growth.
    const honest = new Uint8Array(gzipSync(randomBytes(BOMB.length).toString("base64").slice(0, BOMB.length)));
    for (const a of await fifty(honest)) expect(a.status).toBe(400);
    const before = rss(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 10);
    const started = Date.now();
    const answers = await fifty(BOMB);
    clearInterval(sampler);
    for (const a of answers) {
      expect(a.status).toBe(429);
      expect(a.body.code).toBe("resource_exhausted");
      expect(a.body.message).toMatch(/after decompression/);
    }
    expect(peak - before, `RSS grew by ${((peak - before) / MiB).toFixed(1)} MiB in ${Date.now() - started} ms`).toBeLessThan(50 * MiB);
    const health = await fetch(`${server.base}/media.v1.HealthService/Check`, { method: "POST", headers: json, body: "{}" });
    expect(health.status).toBe(200);
  });

  it("a bomb in a Connect stream frame or a gRPC-web frame ends the stream with resource_exhausted", async () => {
    const frame = envelope(1, BOMB);
    const connect = await fetch(`${server.base}/media.v1.JobService/Watch`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", "connect-content-encoding": "gzip" },
      body: frame,
    });
    expect(connect.status).toBe(200);
    const end = Buffer.from(await connect.arrayBuffer());
    expect(end[0]).toBe(2); // end-stream flag
    expect(JSON.parse(end.subarray(5).toString()).error.code).toBe("resource_exhausted");
    const grpcWeb = await fetch(`${server.base}/media.v1.JobService/Watch`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+json", "grpc-encoding": "gzip" },
      body: frame,
    });
    expect(grpcWeb.status).toBe(200);
    expect(Buffer.from(await grpcWeb.arrayBuffer()).toString()).toMatch(/grpc-status: ?8\b/); // RESOURCE_EXHAUSTED
    const binary = await fetch(`${server.base}/media.v1.APIKeyService/List`, {
      method: "POST",
      headers: { "content-type": "application/proto", "content-encoding": "gzip" },
      body: BOMB,
    });
    expect(binary.status).toBe(429);
  });

  it("a body that is not gzip under Content-Encoding: gzip → 400 invalid_argument", async () => {
    const r = await fetch(`${server.base}/media.v1.APIKeyService/List`, { method: "POST", headers: { ...json, "content-encoding": "gzip" }, body: "{}" });
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe("invalid_argument");
  });

  it("an encoding we do not accept (br) → unimplemented, naming the ones we do", async () => {
    const r = await fetch(`${server.base}/media.v1.APIKeyService/List`, { method: "POST", headers: { ...json, "content-encoding": "br" }, body: "{}" });
    expect(r.status).toBe(501);
    const body = await r.json();
    expect(body.code).toBe("unimplemented");
    expect(body.message).toMatch(/gzip/);
    expect(r.headers.get("accept-encoding")).toBe("gzip");
  });

  it("a gzip body within the limit is read; an answer is gzipped only when asked for", async () => {
    const r = await fetch(`${server.base}/media.v1.HealthService/Check`, {
      method: "POST",
      headers: { ...json, "content-encoding": "gzip", "accept-encoding": "identity" },
      body: gzipSync("{}"),
    });
    expect(r.status).toBe(200);
    expect((await r.json()).status).toBe("healthy");
  });

  it.each(["abc", "-1", "99999999999", "9999999999"])("Connect-Timeout-Ms %s → 400 invalid_argument", async (timeout) => {
    const r = await fetch(`${server.base}/media.v1.HealthService/Check`, { method: "POST", headers: { ...json, "connect-timeout-ms": timeout }, body: "{}" });
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe("invalid_argument");
  });

  it("a valid Connect-Timeout-Ms is honoured", async () => {
    const r = await fetch(`${server.base}/media.v1.HealthService/Check`, { method: "POST", headers: { ...json, "connect-timeout-ms": "5000" }, body: "{}" });
    expect(r.status).toBe(200);
  });

  it("answers a CORS preflight from an allowed origin, and none from another", async () => {
    const allowed = await raw(server.base, "OPTIONS", "/media.v1.JobService/Create", {
      origin: "https://app.example.com",
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type, authorization, x-organization-id, connect-protocol-version",
    });
    expect(allowed.status).toBe(204);
    expect(allowed.headers["access-control-allow-origin"]).toBe("https://app.example.com");
    expect(String(allowed.headers["access-control-allow-methods"])).toMatch(/POST/);
    expect(String(allowed.headers["access-control-allow-headers"]).toLowerCase()).toMatch(/authorization.*x-organization-id|x-organization-id.*authorization/);
    expect(allowed.headers["access-control-max-age"]).toBeDefined();
    const other = await raw(server.base, "OPTIONS", "/media.v1.JobService/Create", { origin: "https://evil.example", "access-control-request-method": "POST" });
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("exposes the headers a browser needs on answers to an allowed origin, errors too", async () => {
    const r = await fetch(`${server.base}/media.v1.APIKeyService/List`, {
      method: "POST",
      headers: { ...json, origin: "https://app.example.com" },
      body: "{}",
    });
    expect(r.status).toBe(401);
    expect(r.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(r.headers.get("access-control-expose-headers")).toMatch(/X-Request-ID/);
    expect(r.headers.get("vary")).toMatch(/Origin/);
  });

  it.each(["GET", "PUT", "DELETE", "PATCH", "HEAD"])("%s → 405 with Allow: POST", async (method) => {
    const r = await raw(server.base, method, "/media.v1.HealthService/Check", {});
    expect(r.status).toBe(405);
    expect(r.headers.allow).toMatch(/POST/);
  });

  // uWS 20.30's own parser gives these no answer (docs/front-door.md); node:http answers them.
  it.skipIf(host === "uws")("a method HTTP allows but the API does not use (QUERY, PROPFIND) → 405 with Allow", async () => {
    for (const method of ["QUERY", "PROPFIND"]) {
      const answer = await socket(server.base, `${method} /media.v1.HealthService/Check HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 405 /);
      expect(answer).toMatch(/\r\nallow: POST, OPTIONS\r\n/i);
    }
  });

  it.skipIf(host === "uws")("every header name HTTP allows is accepted; a control character in a value → 400", async () => {
    for (const name of ["X_Trace", "x.trace", "x~t", "x|y", "x!y"]) {
      const r = await raw(server.base, "POST", "/media.v1.HealthService/Check", { ...json, [name]: "1" }, Buffer.from("{}"));
      expect(r.status, name).toBe(200);
    }
    const answer = await socket(
      server.base,
      `POST /media.v1.HealthService/Check HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  });

  it("a binary body that does not parse → invalid_argument with ErrorDetails, in every protocol", async () => {
    const garbage = Uint8Array.from([0x0a, 0xff, 0xff, 0xff]); // a length past the end
    const boot = readBootstrap(server.dataDir);
    const auth = { authorization: `Bearer ${boot.api_key}`, "x-organization-id": boot.organization_id }; // streams authenticate before they read
    const unary = await fetch(`${server.base}/media.v1.AppService/Get`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/proto" },
      body: garbage,
    });
    expect(unary.status).toBe(400);
    const error = await unary.json();
    expect(error.code).toBe("invalid_argument");
    expect(error.details.map((d: { type: string }) => d.type)).toContain("media.v1.ErrorDetails");
    const connect = await fetch(`${server.base}/media.v1.JobService/Watch`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/connect+proto" },
      body: envelope(0, garbage),
    });
    const end = Buffer.from(await connect.arrayBuffer());
    expect(end[0]).toBe(2);
    const endError = JSON.parse(end.subarray(5).toString()).error;
    expect(endError.code).toBe("invalid_argument");
    expect(endError.details.map((d: { type: string }) => d.type)).toContain("media.v1.ErrorDetails");
    const grpcWeb = await fetch(`${server.base}/media.v1.AppService/Get`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/grpc-web+proto" },
      body: envelope(0, garbage),
    });
    const trailer = Buffer.from(await grpcWeb.arrayBuffer()).toString();
    expect(trailer).toMatch(/grpc-status: ?3\b/);
    expect(trailer).toMatch(/grpc-status-details-bin/);
  });

  it("an unknown path → 404 whose body says unimplemented", async () => {
    const r = await raw(server.base, "POST", "/media.v1.NoSuch/Method", json, Buffer.from("{}"));
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).code).toBe("unimplemented");
  });

  it("a message exactly at the limit is read; one byte more is resource_exhausted", async () => {
    const limit = 4 * MiB;
    const shell = JSON.stringify({ name: "k", description: "" });
    const at = shell.replace('"description":""', `"description":"${"d".repeat(limit - shell.length)}"`);
    expect(at.length).toBe(limit);
    const r = await fetch(`${server.base}/media.v1.APIKeyService/Create`, { method: "POST", headers: json, body: at });
    expect(r.status).toBe(401); // read whole and parsed: it got as far as authentication
    const over = await fetch(`${server.base}/media.v1.APIKeyService/Create`, { method: "POST", headers: json, body: `${at} ` });
    expect(over.status).toBe(429);
    // Enveloped: the 5-byte prefix is not counted against the message.
    const message = Buffer.from(JSON.stringify({ id: `job_${"x".repeat(limit - 13)}` }));
    expect(message.length).toBe(limit);
    const stream = await fetch(`${server.base}/media.v1.JobService/Watch`, {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body: envelope(0, message),
    });
    const end = Buffer.from(await stream.arrayBuffer());
    expect(JSON.parse(end.subarray(5).toString()).error.code).toBe("unauthenticated");
  });
});

describe.skipIf(TARGET === "cluster").each(["uws", "node"] as const)("streams on %s", (host) => {
  let server: HostServer;
  let base: string;

  beforeAll(async () => {
    // A server-streaming handler of two messages 1.5 s apart, straight on the host adapter.
    const handler = (async () => ({
      status: 200,
      header: new Headers({ "content-type": "application/connect+json" }),
      body: (async function* () {
        yield envelope(0, Buffer.from('{"n":1}'));
        await new Promise((r) => setTimeout(r, 1500));
        yield envelope(0, Buffer.from('{"n":2}'));
        yield envelope(2, Buffer.from("{}"));
      })(),
    })) as unknown as UniversalHandler;
    const options: HostOptions = {
      host: "127.0.0.1",
      port: 0,
      cors: { origins: [] },
      log: createLogger("silent"),
      contextValues: (a) => createContextValues().set(CLIENT_ADDRESS, a),
    };
    const handlers = { rpc: new Map([["/test.Stream/Two", handler]]), edge: new EdgeRouter([]) };
    server = host === "uws" ? await listenUws(handlers, options) : await listenNodeHttp(handlers, options);
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close(1000);
  });

  it("the first message arrives as soon as it is produced, not with the second", async () => {
    const started = Date.now();
    const res = await fetch(`${base}/test.Stream/Two`, {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body: envelope(0, Buffer.from("{}")),
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    const firstAt = Date.now() - started;
    expect(Buffer.from(first.value!).subarray(5, 12).toString()).toBe('{"n":1}');
    expect(firstAt).toBeLessThan(1000);
    let rest = 0;
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value.length;
    expect(rest).toBeGreaterThan(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
  });
});
