// The CLI's errors as a newcomer meets them, each in one line that says what to do: an unknown
// command or option named, a missing or wrong FILE found before any call, and a server that is not
// there named with its URL and the settings that point elsewhere. No server is started here (the
// upload itself, its progress and a failed video are in hosting.test.ts's CLI test).
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { freePort, ROOT, spawnServer, TARGET } from "../harness.js";

const run = promisify(execFile);
const work = mkdtempSync(path.join(tmpdir(), "cli-"));
const env = { ...process.env, MEDIA_DATA_DIR: path.join(work, "data"), MEDIA_API_KEY: "sk_test", MEDIA_ORGANIZATION_ID: "org_test", MEDIA_LOG_LEVEL: "silent" };

async function media(args: string[], extra: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [path.join(ROOT, "bin/media.js"), ...args], { env: { ...env, ...extra }, cwd: work }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe.skipIf(TARGET === "cluster")("media CLI errors", () => {
  it("names an unknown command or option, and where to find the usage", async () => {
    const unknown = await media(["frobnicate"]);
    expect(unknown).toMatchObject({ code: 2, stdout: "", stderr: "media: unknown command 'frobnicate' (media --help lists the commands)\n" });
    const option = await media(["upload", "--nope", "a.mp4"]);
    expect(option).toMatchObject({ code: 2, stderr: "media upload: unknown option '--nope' (media upload --help shows the usage)\n" });
    const extra = await media(["upload", "a.mp4", "b.mp4"]);
    expect(extra).toMatchObject({ code: 2, stderr: "media upload: unexpected argument 'b.mp4' (media upload --help shows the usage)\n" });
    const help = await media(["upload", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: media upload FILE/);
  }, 60_000);

  it("checks FILE before calling anything: required, found, a file, a known visibility", async () => {
    const folder = path.join(work, "folder");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(work, "clip.mp4"), "not really a video");
    expect(await media(["upload"])).toMatchObject({ code: 2, stderr: "media upload: FILE is required (media upload --help shows the usage)\n" });
    expect(await media(["upload", "missing.mp4"])).toMatchObject({ code: 2, stderr: "media upload: file not found: missing.mp4\n" });
    expect(await media(["upload", "folder"])).toMatchObject({
      code: 2,
      stderr: "media upload: not a file: folder is a folder; give the path of a video file\n",
    });
    expect(await media(["upload", "clip.mp4", "--visibility", "secret"])).toMatchObject({
      code: 2,
      stderr: "media upload: --visibility must be public, unlisted or private, not 'secret'\n",
    });
  }, 60_000);

  it("a server that is not there: its URL, the cause, and the settings that point elsewhere", async () => {
    writeFileSync(path.join(work, "clip.mp4"), "not really a video");
    const port = freePort();
    const r = await media(["upload", "clip.mp4"], { MEDIA_API_URL: `http://127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `media: cannot reach the media server at http://127.0.0.1:${port} (ECONNREFUSED). Is \`npx media serve\` running? If it listens elsewhere, set MEDIA_API_URL (or MEDIA_HTTP_PORT, the port serve was started with)\n`,
    );
    const listed = await media(["videos"], { MEDIA_HTTP_PORT: String(port) });
    expect(listed.stderr).toContain(`cannot reach the media server at http://localhost:${port} (ECONNREFUSED)`);
  }, 60_000);
});

describe.skipIf(TARGET === "cluster")("sign-in links from the CLI", () => {
  it("serve prints the owner's one-time link, which signs in once; login-link needs an email", async () => {
    const port = freePort();
    const server = await spawnServer(mkdtempSync(path.join(tmpdir(), "cli-serve-")), port);
    try {
      await expect.poll(() => server.output(), { timeout: 10_000 }).toMatch(/sign in as owner@media\.local \(once, within 15 minutes/);
      const link = new URL(/(http:\/\/localhost:\d+\/auth\/link\/\S+)/.exec(server.output())![1]!);
      expect(link.port).toBe(String(port));
      const spend = () => fetch(`${server.base}${link.pathname}`, { method: "POST", headers: { origin: server.base }, redirect: "manual" });
      const first = await spend();
      expect(first.status).toBe(303);
      expect(first.headers.get("set-cookie")).toMatch(/^media_session=[A-Za-z0-9]{43}; Path=\/; HttpOnly; SameSite=Lax/);
      expect((await spend()).status).toBe(400);
    } finally {
      await server.stop();
    }
    const missing = await media(["login-link"]);
    expect(missing).toMatchObject({ code: 2, stderr: "media login-link: --email <address> is required\n" });
  }, 60_000);
});
