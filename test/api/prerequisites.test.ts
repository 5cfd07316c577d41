// An encoder without ffmpeg: the embedded server starts, says in one line what is missing and how
// to install it, reports its encoder unhealthy with that reason, and takes no task, so a job waits
// in the queue instead of failing. Installing ffmpeg needs no restart (the node looks again).
import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, freePort, ok, readBootstrap, spawnServer, TARGET, tempDataDir, type ChildServer } from "../harness.js";

describe.skipIf(TARGET === "cluster")("an encoder node without ffmpeg", () => {
  let server: ChildServer | undefined;
  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  it("says what is missing in one line, is unhealthy with the reason, and leaves jobs queued", async () => {
    const dataDir = tempDataDir();
    const emptyBin = path.join(dataDir, "..", `no-ffmpeg-${process.pid}`);
    mkdirSync(emptyBin, { recursive: true });
    server = await spawnServer(dataDir, freePort(), { PATH: emptyBin, MEDIA_NET_ALLOW: "127.0.0.1/32" });
    const lines = server.output().split("\n");
    expect(lines).toContain(
      "media: encoder stopped: ffmpeg is not installed (not on PATH): the encoder needs ffmpeg 5.1 or newer; install it: apt-get install ffmpeg (Debian, Ubuntu), dnf install ffmpeg (Fedora), brew install ffmpeg (macOS)",
    );
    const health = (await call(server.base, "HealthService/Check", {})).body;
    expect(health.status).toBe("unhealthy");
    expect(health.components).toEqual([
      { name: "database", status: "healthy" },
      { name: "encoder", status: "unhealthy", message: expect.stringMatching(/^ffmpeg is not installed .*; ffprobe is not installed /) },
    ]);
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };
    const created = await ok(call(server.base, "VideoService/CreateFromUrl", { app_id: boot.app_id, url: "http://127.0.0.1:9/clip.mp4" }, auth));
    await new Promise((r) => setTimeout(r, 3_000));
    const job = (await ok(call(server.base, "JobService/Get", { id: created.video.job_id }, auth))).job;
    expect(job.status).toBe("pending");
    expect((await ok(call(server.base, "VideoService/Get", { id: created.video.id }, auth))).video.status).toBe("processing");
  }, 120_000);
});
