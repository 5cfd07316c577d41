// One writer per data folder: a second `media serve` (or `serve --help`) on the folder of a running
// server exits without touching its store log, and what the first server writes afterwards survives
// its restart. (Before the lock, the second one compacted store.log by renaming a new file over it,
// and the first kept appending to the replaced file: those writes were gone after a restart.)
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, freePort, ok, readBootstrap, ROOT, spawnServer, tempDataDir, TARGET, type ChildServer } from "../harness.js";

/** Runs `media <args>` on the data folder to its end (killed after 30 s: it should not be serving). */
function run(dataDir: string, args: string[], port = 0): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/media.js"), ...args], {
      cwd: ROOT,
      env: { ...process.env, MEDIA_DATA_DIR: dataDir, MEDIA_HTTP_PORT: String(port), MEDIA_HTTP_HOST: "127.0.0.1", MEDIA_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.skipIf(TARGET === "cluster")("one writer per data folder", () => {
  const dataDir = tempDataDir();
  const log = path.join(dataDir, "store.log");
  let server: ChildServer | undefined;
  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  it("refuses a second serve and serve --help without touching the store, and loses nothing", async () => {
    const port = freePort();
    server = await spawnServer(dataDir, port);
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };
    const before = (await ok(call(server.base, "APIKeyService/Create", { name: "before-second-serve" }, auth))).api_key.id as string;

    const files = readdirSync(dataDir).sort();
    const { ino } = statSync(log);
    const bytes = readFileSync(log);

    // On the running server's port (the reported case: it used to fail on the port only after
    // opening the store), on a free port, and for its usage.
    const taken = await run(dataDir, ["serve"], port);
    const free = await run(dataDir, ["serve"]);
    const help = await run(dataDir, ["serve", "--help"]);

    // The same file (a compaction renames a new one over it), only appended to: the running server
    // itself writes now and then, so its size and mtime may grow, but what was there stays.
    expect(statSync(log).ino).toBe(ino);
    expect(readFileSync(log).subarray(0, bytes.length).equals(bytes)).toBe(true);
    expect(readdirSync(dataDir).sort()).toEqual(files);
    expect(JSON.parse(readFileSync(path.join(dataDir, "media.lock"), "utf8")).pid).toBe(server.child.pid);

    const refusal = `media: the data folder ${dataDir} is in use by another media process (pid ${server.child.pid}); stop it or set MEDIA_DATA_DIR to another folder\n`;
    for (const second of [taken, free]) {
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toBe(refusal);
    }
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^usage: media serve\n/);

    const after = (await ok(call(server.base, "APIKeyService/Create", { name: "after-second-serve" }, auth))).api_key.id as string;
    expect(await server.stop("SIGTERM")).toBe(0);
    // Released at exit.
    expect(readdirSync(dataDir)).not.toContain("media.lock");

    server = await spawnServer(dataDir, freePort());
    const listed = (await ok(call(server.base, "APIKeyService/List", { pagination: { limit: 100 } }, auth))).api_keys.map((k: { id: string }) => k.id);
    expect(listed).toEqual(expect.arrayContaining([before, after]));
  });
});
