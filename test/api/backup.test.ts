// A backup taken under load restores to a server that answers every create acknowledged before the
// backup began: `media serve` on its own folder, writers creating API keys, `media backup` in the
// middle, then `media restore` into a new folder and a server started on it.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { call, freePort, readBootstrap, ROOT, spawnServer, tempDataDir, TARGET, type ChildServer } from "../harness.js";

const run = promisify(execFile);

async function media(args: string[], dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, MEDIA_DATA_DIR: dataDir, MEDIA_LOG_LEVEL: "silent" };
  return run(process.execPath, [path.join(ROOT, "bin/media.js"), ...args], { env, cwd: ROOT }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe.skipIf(TARGET === "cluster")("backup and restore of the embedded data folder", () => {
  const servers: ChildServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop("SIGKILL");
  });

  it("restores every create acknowledged before the backup began, and none acknowledged after it ended", async () => {
    const dataDir = tempDataDir();
    const server = await spawnServer(dataDir, freePort());
    servers.push(server);
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };

    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const r = await call(server.base, "APIKeyService/Create", { name: `w${w}-${i}` }, auth);
        if (r.status === 200) acknowledged.push(r.body.api_key.id as string);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    while (acknowledged.length < 100) await new Promise((r) => setTimeout(r, 5));

    const file = path.join(mkdtempSync(path.join(tmpdir(), "backup-file-")), "media.tar");
    const before = [...acknowledged];
    const taken = await media(["backup", file], dataDir);
    const duringBackup = acknowledged.length - before.length;
    const afterEnd = acknowledged.length;
    expect(taken).toMatchObject({ code: 0, stderr: "" });
    expect(taken.stdout).toMatch(
      /^backup written: .*media\.tar \(\d+ files, [\d.]+ MiB\); it holds the server secret: keep it as private as the data folder\n$/,
    );
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // Creates went on while the backup ran, and go on after it.
    while (acknowledged.length < afterEnd + 20) await new Promise((r) => setTimeout(r, 5));
    const after = acknowledged.slice(afterEnd);

    // The running server's folder is refused, whatever --force says.
    const refused = await media(["restore", file, "--force"], dataDir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^media restore: the data folder .* is in use by another media process \(pid \d+\); stop it or set MEDIA_DATA_DIR to another folder\n$/,
    );

    stop = true;
    await Promise.all(writers);
    expect(await server.stop("SIGTERM")).toBe(0);

    const restoredDir = path.join(tempDataDir(), "data");
    const restored = await media(["restore", file], restoredDir);
    expect(restored).toMatchObject({ code: 0, stderr: "" });
    expect(restored.stdout).toMatch(/^restored .*media\.tar \(taken \S+ by media \S+; \d+ files, [\d.]+ MiB\) into .*data\n$/);
    expect(readFileSync(path.join(restoredDir, "server-secret"), "utf8")).toBe(readFileSync(path.join(dataDir, "server-secret"), "utf8"));

    const again = await spawnServer(restoredDir, freePort());
    servers.push(again);
    // It starts as the same service: no new bootstrap, the same key.
    await expect.poll(() => again.output(), { timeout: 10_000 }).toMatch(/media is running on/);
    expect(again.output()).not.toMatch(/bootstrap credentials/);
    expect(again.output()).not.toMatch(/"level":(50|60)/); // no error logged
    expect(readBootstrap(restoredDir)).toEqual(boot);
    const missing: string[] = [];
    for (const id of before) if ((await call(again.base, "APIKeyService/Get", { id }, auth)).status !== 200) missing.push(id);
    expect(missing).toEqual([]);
    // The backup is a cut in time, not the folder as it is now: nothing acknowledged after it ended.
    for (const id of after) expect((await call(again.base, "APIKeyService/Get", { id }, auth)).body.code).toBe("not_found");
    expect(duringBackup).toBeGreaterThan(0);
    // And the restored store takes writes.
    expect((await call(again.base, "APIKeyService/Create", { name: "after-restore" }, auth)).status).toBe(200);
    expect(await again.stop("SIGTERM")).toBe(0);
  }, 120_000); // about 25 s on a quiet machine; the limit catches a hang

  it("names what is missing in one line", async () => {
    const dataDir = tempDataDir();
    expect(await media(["backup"], dataDir)).toMatchObject({ code: 2, stderr: "media backup: FILE is required (media backup --help shows the usage)\n" });
    expect(await media(["restore", "a.tar", "b.tar"], dataDir)).toMatchObject({
      code: 2,
      stderr: "media restore: unexpected argument 'b.tar' (media restore --help shows the usage)\n",
    });
    const none = await media(["backup", path.join(tmpdir(), `none-${process.pid}.tar`)], dataDir);
    expect(none).toMatchObject({
      code: 1,
      stderr: `media backup: no embedded data folder at ${dataDir} (no store.log): set MEDIA_DATA_DIR to the folder serve uses\n`,
    });
    // A restore in place that stopped mid-swap: serve refuses the folder until a restore runs again.
    writeFileSync(path.join(dataDir, ".restore-in-progress"), "");
    expect(await media(["serve"], dataDir)).toMatchObject({
      code: 1,
      stderr: `media: a restore into the data folder ${dataDir} did not finish; run media restore again (with --force) before serving it\n`,
    });
    const help = await media(["restore", "--help"], dataDir);
    expect(help.stdout).toMatch(/^usage: media restore FILE \[--force\]\n/);
  }, 60_000);
});
