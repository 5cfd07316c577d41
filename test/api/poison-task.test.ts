// A task that kills its encoder every time is not handed out forever: the embedded server is
// killed (kill -9, its ffmpeg too) each time its encoder runs the job's encode, and restarted on the
// same folder. Each restart finds the lease its earlier life held: a lost lease. The third loss
// abandons the task: the job fails with encoder_lost, its video says so, the task leaves the queue,
// and the next job is encoded as usual.
import { execFile } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { call, freePort, ok, readBootstrap, spawnServer, TARGET, tempDataDir, until, waitForJob, type Auth, type ChildServer } from "../harness.js";

const run = promisify(execFile);

/** Pids of the ffmpeg processes whose arguments name the job (its work folder). */
async function ffmpegOf(jobId: string): Promise<number[]> {
  const { stdout } = await run("ps", ["-eo", "pid=,args="]);
  return stdout
    .split("\n")
    .map((l) => l.trim().match(/^(\d+)\s+(\S+)(.*)$/))
    .filter((m): m is RegExpMatchArray => m !== null && path.basename(m[2]!) === "ffmpeg" && m[3]!.includes(jobId))
    .map((m) => Number(m[1]));
}

describe.skipIf(TARGET === "cluster")("a task that kills its encoder node on every attempt", () => {
  const dataDir = tempDataDir();
  const port = freePort();
  let server: ChildServer | undefined;
  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  async function upload(auth: Auth, appId: string, file: string): Promise<any> {
    const created = await ok(
      call(
        server!.base,
        "VideoService/CreateUpload",
        { app_id: appId, filename: "clip.mp4", content_type: "video/mp4", size_bytes: statSync(file).size },
        auth,
      ),
    );
    expect((await fetch(created.upload_url, { method: "PUT", body: readFileSync(file) })).status).toBe(200);
    await ok(call(server!.base, "VideoService/CompleteUpload", { id: created.video.id }, auth));
    return created.video;
  }

  it("fails the job with encoder_lost at the third lost lease; the task leaves the queue and the next job runs", async () => {
    const long = path.join(dataDir, "..", `poison-${port}.mp4`);
    const short = path.join(dataDir, "..", `short-${port}.mp4`);
    const make = (file: string, seconds: number, size: string) =>
      run("ffmpeg", [
        "-hide_banner",
        "-loglevel",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        `testsrc2=size=${size}:rate=25:duration=${seconds}`,
        "-f",
        "lavfi",
        "-i",
        `sine=frequency=440:duration=${seconds}`,
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
        "-shortest",
        file,
      ]);
    await Promise.all([make(long, 60, "1280x720"), make(short, 2, "320x240")]);
    server = await spawnServer(dataDir, port);
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };
    const video = await upload(auth, boot.app_id, long);
    for (let kill = 1; kill <= 3; kill++) {
      const pids = await until(
        `ffmpeg encoding ${video.job_id} (attempt ${kill})`,
        async () => {
          const found = await ffmpegOf(video.job_id);
          return found.length > 0 ? found : undefined;
        },
        90_000,
      );
      await server.stop("SIGKILL");
      for (const pid of [...pids, ...(await ffmpegOf(video.job_id))]) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone already */
        }
      }
      server = await spawnServer(dataDir, port);
    }
    const job = await waitForJob(server.base, video.job_id, auth, { ms: 90_000 });
    expect(job.status).toBe("failed");
    expect(job.error_code).toBe("encoder_lost");
    expect(job.error_message).toContain("lost 3 times");
    // The video hears how its job ended from the job's outbox, just after the job's own write.
    const failed = await until("the video failed", async () => {
      const v = (await ok(call(server!.base, "VideoService/Get", { id: video.id }, auth))).video;
      return v.status === "processing" ? undefined : v;
    });
    expect(failed).toMatchObject({ status: "error", error_code: "encoder_lost" });
    // Not handed out again, and the node takes the next job.
    const next = await upload(auth, boot.app_id, short);
    // Its job is created by the video once the upload completes: wait on the video.
    const ready = await until(
      "the next video ready",
      async () => {
        const v = (await ok(call(server!.base, "VideoService/Get", { id: next.id }, auth))).video;
        return v.status === "processing" || v.status === "uploading" ? undefined : v;
      },
      90_000,
    );
    expect(ready.status).toBe("ready");
    expect(await ffmpegOf(video.job_id)).toEqual([]);
  }, 420_000);
});
