// The official Connect conformance suite (connectconformance v1.0.7, server mode) against the
// gateway's own host adapters, uWS and node:http, serving ConformanceService (see server.ts).
// The runner starts the server-under-test once per server configuration and drives every test
// case of conformance.yaml's features at it; it exits 0 only when all of them pass (and the cases
// of known-failing.txt fail).
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;

let runner = "";

beforeAll(async () => {
  // Installs the pinned runner when it is missing (about a minute; scripts/test.sh does it first),
  // otherwise returns at once. Never synchronously: a worker blocked for a minute misses vitest's
  // RPC timeout ("Timeout calling onTaskUpdate") and the run fails although every test passed.
  const { stdout, stderr } = await promisify(execFile)("bash", [`${here}setup.sh`], { encoding: "utf8" });
  if (stderr) process.stderr.write(stderr);
  runner = stdout.trim();
}, 600_000);

async function conform(adapter: "uws" | "node"): Promise<{ code: number | null; output: string }> {
  const args = [
    "--mode",
    "server",
    "--conf",
    `${here}conformance.yaml`,
    "--known-failing",
    `@${here}known-failing.txt`,
    "--trace",
    // One server process at a time and four RPCs in flight (the runner's defaults are 4 and 8): in
    // a lane beside the cluster suites, four servers starting at once on two cores answered none of
    // a configuration's cases within the runner's time limit.
    "--max-servers",
    "1",
    "--parallel",
    "4",
    "--",
    tsx,
    `${here}server.ts`,
    adapter,
  ];
  const child = spawn(runner, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (output += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (output += s));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  return { code, output };
}

/** The runner's verdict lines: each failed case with its reasons, then the totals (traces left out). */
function summary(output: string): string {
  const lines: string[] = [];
  let inTrace = false;
  for (const line of output.split("\n")) {
    if (line.startsWith("---- HTTP Trace ----")) inTrace = true;
    else if (inTrace && line.startsWith("--------------------")) inTrace = false;
    else if (!inTrace) lines.push(line);
  }
  return lines.join("\n").trim();
}

describe("Connect conformance (server mode)", () => {
  for (const adapter of ["uws", "node"] as const) {
    it(`passes on the ${adapter} host adapter`, async () => {
      const { code, output } = await conform(adapter);
      if (code !== 0) console.error(`connectconformance against ${adapter}, exit code ${code}:\n${output}`);
      expect(code, `connectconformance against ${adapter} failed:\n${summary(output)}`).toBe(0);
    }, 600_000);
  }
});
