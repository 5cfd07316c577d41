// The compose files of deploy/compose on the project's images, as an operator runs them:
// - embedded.yml: one container; a file uploaded through it plays in Chromium;
// - cluster.yml: 2 gateways, 2 actor hosts, 2 encoder nodes, Kafka, Cassandra and MinIO in
//   containers; an upload's encode survives the encoder container running it being stopped, and a
//   gateway stopped by `docker stop` drains and exits cleanly within its grace period.
// Skipped with one line where no container engine can run (test/deploy/engine.ts).
import { execFile, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openPage, playbackAdvances } from "../browser.js";
import { freeLoopbackPort } from "../peers.js";
import { until } from "../cluster/probes.js";
import { ROOT, answers, buildImages, composeProject, docker, engineMissing } from "./engine.js";

const run = promisify(execFile);
const missing = engineMissing();
const randomHex = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");

async function clip(seconds: number, size: string): Promise<string> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "deploy-clip-")), "clip.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", `testsrc2=size=${size}:rate=25:duration=${seconds}`],
    ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`],
    ...["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", file],
  ]);
  return file;
}

interface Bootstrap {
  readonly api_key: string;
  readonly organization_id: string;
}

/** `media upload` from this machine against a compose deployment, as its README shows; resolves with its output. */
function upload(base: string, boot: Bootstrap, file: string, onLine: (line: string) => void = () => undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/media.js"), "upload", file, "--title", "Deployed clip"], {
      env: { ...process.env, MEDIA_API_URL: base, MEDIA_API_KEY: boot.api_key, MEDIA_ORGANIZATION_ID: boot.organization_id },
    });
    let out = "";
    const take = (d: Buffer) => {
      out += d.toString();
      for (const line of d.toString().split("\n")) if (line.trim()) onLine(line.trim());
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`media upload exited ${code}:\n${out}`))));
  });
}

const line = (out: string, name: string) => out.match(new RegExp(`^${name}:\\s+(\\S+)`, "m"))?.[1];

describe.skipIf(missing !== undefined)("deploy/compose", () => {
  let browser: Browser;
  beforeAll(async () => {
    await buildImages();
    browser = await launchChromium();
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("embedded.yml: one container comes up with a volume, and a video uploaded through it plays in Chromium", async () => {
    const port = await freeLoopbackPort();
    const base = `http://127.0.0.1:${port}`;
    const p = composeProject("deploy/compose/embedded.yml", `mediatest-embedded-${process.pid}`, { MEDIA_PORT: String(port), MEDIA_PUBLIC_URL: base });
    try {
      await p.compose("up", "-d");
      expect(await until(() => answers(`${base}/readyz`), 120_000), await p.logs()).toBe(true);
      const boot = JSON.parse(await docker("exec", await p.container("media"), "cat", "/data/bootstrap.json")) as Bootstrap;
      const out = await upload(base, boot, await clip(8, "640x360"));
      const embed = line(out, "embed");
      expect(embed, out).toMatch(new RegExp(`^${base}/v/vid_`));
      const { page, status } = await openPage(browser, embed!);
      expect(status).toBe(200);
      expect(await playbackAdvances(page, 2)).toBeGreaterThan(2);
      await page.screenshot({ path: path.join(ROOT, "docs/images/deploy-embedded-compose.png") });
      // The data is the volume's: a new container of the same project serves the same video.
      await p.compose("up", "-d", "--force-recreate");
      expect(await until(() => answers(`${base}/readyz`), 120_000), await p.logs()).toBe(true);
      expect((await openPage(browser, embed!)).status).toBe(200);
    } finally {
      await p.down();
    }
  }, 600_000);

  it("cluster.yml: an encode survives its encoder container being stopped, and a gateway drains on docker stop", async () => {
    const [port, port2] = [await freeLoopbackPort(), await freeLoopbackPort()];
    const base = `http://127.0.0.1:${port}`;
    const p = composeProject("deploy/compose/cluster.yml", `mediatest-cluster-${process.pid}`, {
      MEDIA_PORT: String(port),
      MEDIA_PORT_2: String(port2),
      MEDIA_PUBLIC_URL: base,
      MEDIA_SERVER_SECRET: randomHex(32),
      MINIO_ROOT_PASSWORD: randomHex(16),
      // A stopped node's task is handed on after this long without renewal.
      MEDIA_ENCODE_LEASE_SECONDS: "5",
    });
    try {
      await p.compose("up", "-d");
      const ready = () => Promise.all([answers(`${base}/readyz`), answers(`http://127.0.0.1:${port2}/readyz`)]).then((r) => r.every(Boolean));
      expect(await until(ready, 300_000), await p.logs()).toBe(true);
      const encoders = [await p.container("encoder-node-1"), await p.container("encoder-node-2")];
      const boot = JSON.parse(await docker("exec", await p.container("gateway-1"), "cat", "/data/bootstrap.json")) as Bootstrap;

      // While the upload's encode runs, the encoder container running ffmpeg is stopped at once.
      let stopped: string | undefined;
      let watching = true;
      const watcher = (async () => {
        while (watching && stopped === undefined) {
          for (const id of encoders) {
            // docker top runs ps on the host, which must print a PID column to tell the container's processes.
            const ps = await docker("top", id, "-eo", "pid,comm").catch(() => "");
            if (/\bffmpeg\b/.test(ps)) {
              stopped = id;
              await docker("stop", "-t", "0", id);
              break;
            }
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      const out = await upload(base, boot, await clip(40, "854x480"));
      watching = false;
      await watcher;
      expect(stopped, `no encoder was seen running ffmpeg:\n${out}`).toBeDefined();
      expect(out).toMatch(/^ready$/m);
      const survivor = encoders.find((id) => id !== stopped)!;
      expect(JSON.parse(await docker("inspect", "--format", "{{json .State.Running}}", survivor))).toBe(true);
      const playback = line(out, "playback");
      expect(playback, out).toMatch(/\.m3u8$/);
      expect((await fetch(playback!)).status).toBe(200);

      // docker stop of a gateway: SIGTERM, readiness off, in-flight work done, exit 0 well within the grace period.
      const gateway = await p.container("gateway-2");
      const t0 = Date.now();
      await docker("stop", "-t", "30", gateway);
      const seconds = (Date.now() - t0) / 1000;
      const state = JSON.parse(await docker("inspect", "--format", "{{json .State}}", gateway)) as { ExitCode: number; OOMKilled: boolean };
      expect(state.ExitCode, await p.logs("gateway-2")).toBe(0);
      expect(seconds).toBeLessThan(30);
      // The other gateway still serves.
      expect(await answers(`${base}/readyz`)).toBe(true);
    } finally {
      await p.down();
    }
  }, 900_000);
});
