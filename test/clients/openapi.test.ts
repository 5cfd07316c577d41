// The published OpenAPI description (clients/openapi.json): fresh against proto/ (regenerated here
// and compared), valid for an OpenAPI validator from the registry (@readme/openapi-parser), served
// by a live gateway at GET /openapi.json, and usable: a client generated from it by a mainstream
// generator (openapi-typescript's types over openapi-fetch) type-checks and calls the live
// service. Response conformance of every unary method is the fuzz test's (test/fuzz/), which
// drives the same document.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { compileErrors, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startHarness, type Harness } from "../harness.js";
import { generateRaw, PUBLISHED, renderOpenApi } from "../../scripts/openapi.js";
import { publishOpenApi, STREAMING } from "../../wire/openapi.js";

const run = promisify(execFile);
let h: Harness;
const committed = readFileSync(PUBLISHED, "utf8");
const doc = JSON.parse(committed);

beforeAll(async () => {
  // The generator (protoc-gen-connect-openapi) is built by the fuzz test's setup; quick once done.
  await run("bash", [path.join(ROOT, "test/fuzz/setup.sh")], { cwd: ROOT });
  h = await startHarness();
}, 900_000);

afterAll(async () => {
  await h?.server.close();
});

describe("the published OpenAPI description", () => {
  it("is what proto/ generates today (run npx tsx scripts/openapi.ts when this fails)", () => {
    const fresh = renderOpenApi(publishOpenApi(generateRaw()));
    expect(fresh === committed, "clients/openapi.json is stale: run npx tsx scripts/openapi.ts").toBe(true);
  });

  it("validates as OpenAPI 3.1, and the validator refuses a broken copy", async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    const broken = structuredClone(doc);
    broken.paths["/media.v1.JobService/Get"].post.responses["200"].content["application/json"].schema.$ref = "#/components/schemas/media.v1.Nothing";
    expect((await validate(broken)).valid).toBe(false);
  });

  it("describes the spec's JSON: lowercase enums, numbers for 64-bit integers, Watch as a marked Connect stream", () => {
    const schemas = doc.components.schemas;
    expect(schemas["media.v1.JobStatus"].enum).toEqual(expect.arrayContaining(["unspecified", "pending", "completed", "awaiting_confirmation"]));
    expect(JSON.stringify(schemas)).not.toContain("JOB_STATUS_");
    expect(schemas["media.v1.Video"].properties.input_size_bytes.type).not.toContain("string");
    const watch = doc.paths["/media.v1.JobService/Watch"].post;
    expect(watch[STREAMING]).toBe("server-stream");
    expect(Object.keys(watch.requestBody.content)).toEqual(["application/connect+json"]);
    const create = doc.paths["/media.v1.JobService/Create"].post;
    expect(create[STREAMING]).toBeUndefined();
    expect(create.responses.default.content["application/json"].schema.$ref).toBe("#/components/schemas/connect.error");
    expect(doc.paths["/media.v1.HealthService/Check"].post.security).toEqual([]);
    expect(doc.components.securitySchemes.apiKey.scheme).toBe("bearer");
  });

  it("is served by the gateway at GET /openapi.json, plain and gzipped", async () => {
    const plain = await fetch(`${h.base}/openapi.json`, { headers: { "accept-encoding": "identity" } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await plain.text()).toBe(committed);
    // fetch undoes gzip by itself; node:http's raw bytes show what went over the wire.
    const raw = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      import("node:http")
        .then(({ get }) =>
          get(`${h.base}/openapi.json`, { headers: { "accept-encoding": "gzip" } }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => resolve({ encoding: res.headers["content-encoding"], body: Buffer.concat(chunks) }));
          }).on("error", reject),
        )
        .catch(reject);
    });
    expect(raw.encoding).toBe("gzip");
    expect(raw.body.length).toBeLessThan(committed.length / 4);
    expect(gunzipSync(raw.body).toString("utf8")).toBe(committed);
    expect((await fetch(`${h.base}/openapi.json`, { method: "POST" })).status).toBe(405);
  });

  it("generates a typed client (openapi-typescript + openapi-fetch) that calls three methods of the live service", async () => {
    const dir = path.join(ROOT, ".cache/openapi-client");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    try {
      await run(path.join(ROOT, "node_modules/.bin/openapi-typescript"), [PUBLISHED, "-o", path.join(dir, "schema.d.ts")], { cwd: ROOT });
      writeFileSync(path.join(dir, "calls.ts"), CALLS);
      // Type-checked first: a wrong field name or enum value in CALLS fails here, against the generated types.
      await run(
        path.join(ROOT, "node_modules/.bin/tsc"),
        ["--noEmit", "--strict", "--module", "nodenext", "--target", "es2022", "--skipLibCheck", path.join(dir, "calls.ts")],
        {
          cwd: ROOT,
        },
      ).catch((e: { stdout?: string }) => {
        throw new Error(`the generated client does not type-check: ${e.stdout}`);
      });
      const { stdout } = await run(path.join(ROOT, "node_modules/.bin/tsx"), [path.join(dir, "calls.ts")], {
        cwd: ROOT,
        env: { ...process.env, BASE: h.base, KEY: h.boot.api_key, ORG: h.boot.organization_id },
      });
      const out = JSON.parse(stdout);
      expect(out.health).toBe("healthy");
      expect(out.created).toMatch(/^ak_/);
      expect(out.listed).toContain(out.created);
      expect(out.missing).toEqual({ status: 404, code: "not_found" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** The generated client's program: typed requests and answers, no hand-written types. */
const CALLS = `
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const client = createClient<paths>({ baseUrl: process.env.BASE!, headers: { authorization: "Bearer " + process.env.KEY, "x-organization-id": process.env.ORG! } });
const health = await client.POST("/media.v1.HealthService/Check", { body: {} });
const created = await client.POST("/media.v1.APIKeyService/Create", { body: { name: "from the OpenAPI client" } });
const listed = await client.POST("/media.v1.APIKeyService/List", { body: { pagination: { limit: 100 } } });
const missing = await client.POST("/media.v1.JobService/Get", { body: { id: "job_doesnotexist" } });
const status: "healthy" | "unhealthy" | "degraded" | "unspecified" | undefined = health.data?.status;
console.log(JSON.stringify({
  health: status,
  created: created.data?.api_key?.id,
  listed: (listed.data?.api_keys ?? []).map((k) => k.id),
  missing: { status: missing.response.status, code: missing.error?.code },
}));
`;
