// The rules and the dashboard of deploy/observe, offline: `promtool check rules` and `promtool test
// rules` (Prometheus's own checker and rule unit tests), every alert tested firing, a broken
// threshold caught by those tests, and every query of the rules and of the Grafana dashboard parsed
// by Prometheus's parser (deploy/observe/promql-names) and naming only metrics a running server
// registers or the rules record.
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freePort, ROOT, spawnServer, tempDataDir } from "../harness.js";
import { dashboardQueries, ruleFile, type RuleFile } from "./queries.js";

const rulesDir = path.join(ROOT, "deploy/observe/prometheus");
const scratch = mkdtempSync(path.join(tmpdir(), "media-rules-"));
let promtool = "";
let promqlNames = "";

beforeAll(async () => {
  // Builds them when missing (minutes, cold; scripts/setup.sh does it first), otherwise returns at once.
  const { stdout, stderr } = await promisify(execFile)("bash", [path.join(ROOT, "deploy/observe/setup.sh")], { encoding: "utf8" });
  if (stderr) process.stderr.write(stderr);
  [, promtool = "", promqlNames = ""] = stdout.trim().split("\n");
}, 1_800_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function run(command: string, args: string[], input?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { cwd: rulesDir, encoding: "utf8", maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

describe("the rules", () => {
  const rules: RuleFile = ruleFile();
  const alerts = rules.groups.flatMap((g) => g.rules.filter((r) => r.alert).map((r) => r.alert!));

  it("pass promtool check rules", async () => {
    const r = await run(promtool, ["check", "rules", "rules.yml"]);
    expect(r.out).toContain("SUCCESS");
    expect(r.code).toBe(0);
  });

  it("pass their unit tests (promtool test rules)", async () => {
    const r = await run(promtool, ["test", "rules", "rules.test.yml"]);
    expect(r.out).toContain("SUCCESS");
    expect(r.code).toBe(0);
  });

  it("have a test where each alert fires and one where it does not", () => {
    const tests = parse(readFileSync(path.join(rulesDir, "rules.test.yml"), "utf8")) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    for (const alert of alerts) {
      expect(
        cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0),
        `${alert} stays quiet in a test`,
      ).toBe(true);
    }
  });

  it("fail their unit tests when an alert's threshold is wrong", async () => {
    const text = readFileSync(path.join(rulesDir, "rules.yml"), "utf8");
    const broken = text.replace(
      'media:encode_queue_oldest_age_seconds:max{priority="premium"} > 120',
      'media:encode_queue_oldest_age_seconds:max{priority="premium"} > 1200',
    );
    expect(broken).not.toBe(text);
    writeFileSync(path.join(scratch, "rules.yml"), broken);
    copyFileSync(path.join(rulesDir, "rules.test.yml"), path.join(scratch, "rules.test.yml"));
    const r = await run(promtool, ["test", "rules", path.join(scratch, "rules.test.yml")]);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("alertname: MediaPremiumWorkWaiting");
  });
});

describe("every query of the rules and the dashboard", () => {
  let registered = new Set<string>();

  beforeAll(async () => {
    // What a running server registers: every family of its /metrics, with a histogram's series.
    const server = await spawnServer(tempDataDir(), freePort());
    try {
      const text = await (await fetch(`${server.base}/metrics`)).text();
      for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        registered.add(name!);
        if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) registered.add(name + suffix);
        if (type === "summary") for (const suffix of ["_sum", "_count"]) registered.add(name + suffix);
      }
    } finally {
      await server.stop();
    }
    registered = new Set([...registered, ...ruleFile().groups.flatMap((g) => g.rules.filter((r) => r.record).map((r) => r.record!))]);
  });

  it("parses, and names only metrics the service registers or the rules record", async () => {
    const queries = [...ruleFile().groups.flatMap((g) => g.rules.map((r) => r.expr)), ...dashboardQueries().map((q) => q.expr)];
    expect(queries.length).toBeGreaterThan(40);
    const r = await run(promqlNames, [], JSON.stringify(queries));
    expect(r.code).toBe(0);
    const results = JSON.parse(r.out) as { expr: string; names?: string[]; error?: string }[];
    expect(results).toHaveLength(queries.length);
    const problems: string[] = [];
    for (const q of results) {
      if (q.error) problems.push(`${q.expr}: ${q.error}`);
      for (const name of q.names ?? []) if (!registered.has(name)) problems.push(`${q.expr}: ${name} is not a registered metric`);
      if (!q.error && (q.names ?? []).length === 0) problems.push(`${q.expr}: names no metric`);
    }
    expect(problems).toEqual([]);
  });

  it("would catch a misspelt metric", async () => {
    const r = await run(promqlNames, [], JSON.stringify(["sum(rate(media_rpc_request_total[5m]))"]));
    const [q] = JSON.parse(r.out) as { names: string[] }[];
    expect(registered.has(q!.names[0]!)).toBe(false);
  });
});
