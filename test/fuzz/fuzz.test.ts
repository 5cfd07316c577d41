// Schema-driven fuzzing of every unary method of the running service with schemathesis, from an
// OpenAPI document generated from proto/ at test time (test/fuzz/openapi.ts), plus hand probes of
// the streaming Watch methods and of header names schemathesis does not make. Runs against the
// uWS host (default) and the node:http host, on the embedded mode in-process, or the cluster
// mode with MEDIA_TEST_TARGET=cluster (test/harness.ts). Budget: FUZZ_SECONDS (default 150) split
// over the passes; FUZZ_SEED fixes the seed. Every finding fails the test with schemathesis's
// report (curl lines included).
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startHarness, type Harness } from "../harness.js";
import { buildOpenApi } from "./openapi.js";

const VENV_ST = path.join(ROOT, ".venv-fuzz/bin/st");
const BUDGET = Number(process.env.FUZZ_SECONDS ?? 150);
const HOSTS = (process.env.FUZZ_HOSTS ?? "uws,node").split(",");

let doc: { file: string; routes: string[]; streaming: string[] };
let work: string;

beforeAll(async () => {
  // Asynchronously: a worker blocked for minutes by a first install misses vitest's RPC timeout.
  const { stderr } = await promisify(execFile)("bash", [path.join(ROOT, "test/fuzz/setup.sh")], { cwd: ROOT, encoding: "utf8" });
  if (stderr) process.stderr.write(stderr);
  work = mkdtempSync(path.join(tmpdir(), "media-fuzz-"));
  doc = buildOpenApi(work);
}, 900_000);

interface Pass {
  name: string;
  auth: boolean;
  transport: boolean;
  phases: string;
  mode: string;
  share: number; // of the budget
  checks: string;
}

const CONFORMANCE = "response_schema_conformance,content_type_conformance";
const OURS = "connect_server_error,connect_error_framing";
const PASSES: Pass[] = [
  // examples + coverage: boundary values, missing/odd headers, HTTP methods the schema lacks.
  {
    name: "credentials, coverage",
    auth: true,
    transport: false,
    phases: "examples,coverage",
    mode: "all",
    share: 0.3,
    checks: `${OURS},${CONFORMANCE},unsupported_method`,
  },
  { name: "credentials, fuzzing", auth: true, transport: false, phases: "fuzzing", mode: "all", share: 0.25, checks: `${OURS},${CONFORMANCE}` },
  { name: "no credentials", auth: false, transport: false, phases: "fuzzing", mode: "positive", share: 0.15, checks: `${OURS},${CONFORMANCE}` },
  { name: "transport", auth: true, transport: true, phases: "fuzzing", mode: "positive", share: 0.3, checks: `${OURS},${CONFORMANCE},transport_expectation` },
];

function schemathesis(host: string, base: string, h: Harness, pass: Pass, seconds: number, protectedIds: string[]): Promise<{ code: number; out: string }> {
  // Both hosts get every method, QUERY among them (uWS 20.30 dropped it without an answer; 20.58 answers).
  const config = path.join(work, `${host}.toml`);
  writeFileSync(config, "");
  const args = [
    "--config-file",
    config,
    "run",
    doc.file,
    "--url",
    base,
    "--phases",
    pass.phases,
    "--mode",
    pass.mode,
    "--checks",
    host === "uws" ? pass.checks.replace(",unsupported_method", "") : pass.checks,
    "--max-examples",
    "3",
    "--max-time",
    String(Math.max(5, Math.round(seconds))),
    // One worker: schemathesis's workers are threads, and CPython 3.11 (this machine's 3.11.7) can
    // raise a spurious "AST constructor recursion depth mismatch" SystemError when two threads
    // parse source at once (python/cpython#106905), which Hypothesis does to describe its lambdas:
    // a whole run failed on that "Runtime Error" under load. The budget is time, not cases.
    "--request-timeout",
    "3",
    "--max-response-time",
    "3",
    "--workers",
    "1",
    "--no-shrink",
    "--continue-on-failure",
    "--suppress-health-check",
    "all",
    "--warnings",
    "off",
    "--report-dir",
    path.join(work, "reports"),
  ];
  if (process.env.FUZZ_SEED) args.push("--seed", process.env.FUZZ_SEED);
  if (pass.auth) args.push("-H", `Authorization: Bearer ${h.boot.api_key}`, "-H", `X-Organization-ID: ${h.boot.organization_id}`);
  return new Promise((resolve) => {
    execFile(
      VENV_ST,
      args,
      {
        cwd: work,
        maxBuffer: 64 << 20,
        timeout: (seconds + 120) * 1000,
        env: {
          ...process.env,
          PYTHONPATH: path.join(ROOT, "test/fuzz"),
          SCHEMATHESIS_HOOKS: "hooks",
          FUZZ_PROTECTED: protectedIds.join(","),
          FUZZ_PASS: pass.transport ? "transport" : "plain",
          FUZZ_HOST: host,
          NO_COLOR: "1",
        },
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/** Only the failure part of schemathesis's report, so a red test shows the findings first. */
const findings = (out: string) => {
  const at = out.search(/={5,} (FAILURES|ERRORS) ={5,}/);
  return (at >= 0 ? out.slice(at) : out).slice(0, 60_000);
};

/** One raw HTTP exchange (node:http, so header names are sent as given); never hangs past `ms`. */
function raw(
  base: string,
  opts: { method?: string; path: string; headers: Record<string, string>; body?: Buffer | string },
  ms = 5000,
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer } | { error: string }> {
  return new Promise((resolve) => {
    const req = request(`${base}${opts.path}`, { method: opts.method ?? "POST", headers: opts.headers, timeout: ms }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", (e) => resolve({ error: `response: ${e.message}` }));
    });
    req.on("timeout", () => {
      req.destroy();
      resolve({ error: `no answer within ${ms} ms` });
    });
    req.on("error", (e) => resolve({ error: e.message }));
    req.end(opts.body);
  });
}

const envelope = (json: unknown) => {
  const data = Buffer.from(JSON.stringify(json));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
};

/** Whether an enveloped Connect stream ends with an end-stream frame (flag 2). */
function endsStream(body: Buffer): boolean {
  let at = 0;
  let last = -1;
  while (at + 5 <= body.length) {
    last = body[at]!;
    at += 5 + body.readUInt32BE(at + 1);
  }
  return at === body.length && last >= 0 && (last & 2) !== 0;
}

const curl = (base: string, p: string, headers: Record<string, string>, body: string) =>
  `curl -sv -X POST ${Object.entries(headers)
    .map(([k, v]) => `-H '${k}: ${v}'`)
    .join(" ")} --data-binary '${body}' ${base}${p}`;

for (const host of HOSTS) {
  describe(`fuzz (${host} host)`, () => {
    let h: Harness;
    let base: string;
    // The ids the fuzzer must not end (hooks.py, FUZZ_PROTECTED): its key, app and organization.
    let protectedIds: string[];
    const auth = () => ({ authorization: `Bearer ${h.boot.api_key}`, "x-organization-id": h.boot.organization_id });
    const keysOfOurApp = async () => {
      const r = await raw(base, { path: "/media.v1.APIKeyService/List", headers: { "content-type": "application/json", ...auth() }, body: "{}" });
      return "error" in r ? r.error : `${r.status} ${r.body.toString()}`;
    };

    beforeAll(async () => {
      // Limits off: a refused call tests the limiter (rate-limit tests), not the method behind it.
      const unlimited = { MEDIA_RATE_LIMIT_KEY: "off", MEDIA_RATE_LIMIT_ANONYMOUS: "off", MEDIA_RATE_LIMIT_HEALTH: "off" };
      h = await startHarness(host === "node" ? { ...unlimited, MEDIA_HTTP_SERVER: "node" } : unlimited);
      base = h.bases[0]!;
      const listed = await keysOfOurApp();
      const ids = [...listed.matchAll(/"id":"(ak_[A-Za-z0-9]+)"/g)].map((m) => m[1]!);
      expect(ids, listed).not.toEqual([]);
      protectedIds = [...ids, h.boot.app_id, h.boot.organization_id];
    });
    afterAll(async () => {
      await h?.server.close();
    });

    it("the document covers every unary method", () => {
      expect(doc.routes.length).toBeGreaterThanOrEqual(60);
      expect(doc.streaming.sort()).toEqual(["/media.v1.JobService/Watch", "/media.v1.VideoService/Watch"]);
    });

    for (const pass of PASSES) {
      it(
        `schemathesis: ${pass.name}`,
        async () => {
          const seconds = (BUDGET * pass.share) / HOSTS.length;
          const { code, out } = await schemathesis(host, base, h, pass, seconds, protectedIds);
          const summary = out.slice(out.lastIndexOf("SUMMARY")).slice(0, 2000);
          console.log(`[fuzz ${host}] ${pass.name}\n${summary}`);
          expect(code, findings(out)).toBe(0);
          // A pass that ended its own credentials fuzzed nothing but 401s after that point.
          expect(await keysOfOurApp(), "the fuzzer's API key still works").toMatch(/^200 /);
        },
        (BUDGET + 300) * 1000,
      );
    }

    it("streaming Watch methods answer and end (enveloped JSON, with and without credentials)", async () => {
      const problems: string[] = [];
      for (const p of doc.streaming) {
        for (const [label, extra] of [
          ["credentials", auth()],
          ["none", {}],
        ] as const) {
          for (const body of [envelope({ id: "job_doesnotexist" }), envelope({}), Buffer.from("{}"), Buffer.from([0, 0, 0, 0, 9, 1])]) {
            const headers = { "content-type": "application/connect+json", "connect-protocol-version": "1", ...extra };
            const r = await raw(base, { path: p, headers, body });
            const repro = curl(base, p, headers, body.toString("latin1"));
            if ("error" in r) problems.push(`${label}: ${r.error}\n  ${repro}`);
            else if (r.status >= 500) problems.push(`${label}: HTTP ${r.status}\n  ${repro}`);
            else if (r.status === 200 && !endsStream(r.body))
              problems.push(`${label}: 200 without an end-stream frame: ${r.body.toString("latin1").slice(0, 200)}\n  ${repro}`);
          }
        }
      }
      expect(problems, problems.join("\n")).toEqual([]);
    }, 120_000);

    it("odd header names and values are answered", async () => {
      const problems: string[] = [];
      const route = "/media.v1.HealthService/Check";
      // Token characters in names ("_", "." and "~"): uWS 20.30 gave them no answer; both hosts must.
      const odd: [string, string][] = [
        ["x_under_score", "1"],
        ["x.dot", "1"],
        ["x~tilde", "1"],
      ];
      for (const [name, value] of <[string, string][]>[...odd, ["x-long", "a".repeat(8000)], ["x-empty", ""], ["x-utf8", "\u00e9\u00e8"]]) {
        const headers = { "content-type": "application/json", [name]: value };
        const r = await raw(base, { path: route, headers, body: "{}" });
        const repro = curl(base, route, { ...headers, [name]: value.length > 50 ? "<8000 x a>" : value }, "{}");
        if ("error" in r) problems.push(`${name}: ${r.error}\n  ${repro}`);
        else if (r.status >= 500) problems.push(`${name}: HTTP ${r.status}\n  ${repro}`);
      }
      expect(problems, problems.join("\n")).toEqual([]);
    }, 120_000);

    it("is still healthy afterwards", async () => {
      const r = await raw(base, { path: "/media.v1.HealthService/Check", headers: { "content-type": "application/json" }, body: "{}" });
      expect("status" in r ? r.status : r.error).toBe(200);
    });
  });
}
