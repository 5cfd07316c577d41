// The console's Jobs pages in Chromium: a hosted video (uploaded through the API) is transcoded by a
// job created through the form; a bad form shows the server's field error beside its field; the job's
// page shows the estimate, is confirmed, and follows the job live to completed with its cost; the
// list shows it and filters by status; a second job is canceled. axe-core checks each page, and the
// screenshots of docs/console.md are taken here.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, until } from "../harness.js";
import { makeTestInput } from "../media.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let videoId: string;

beforeAll(async () => {
  kit = await startConsole();
  const auth = { bearer: kit.key.bearer, org: kit.key.org };
  const file = await makeTestInput(path.join(kit.dataDir, "source.mp4"), { seconds: 2, width: 640, height: 360, fps: 25, audio: true });
  const created = await ok(
    call(
      kit.base,
      "VideoService/CreateUpload",
      { app_id: kit.key.app, filename: "source.mp4", title: "Source clip", content_type: "video/mp4", size_bytes: statSync(file).size },
      auth,
    ),
  );
  const put = await fetch(created.upload_url, { method: "PUT", body: readFileSync(file), headers: { "content-type": "video/mp4" } });
  expect(put.status).toBe(200);
  await ok(call(kit.base, "VideoService/CompleteUpload", { id: created.video.id }, auth));
  videoId = created.video.id;
  await until(
    "the source video to be ready",
    async () => ((await ok(call(kit.base, "VideoService/Get", { id: videoId }, auth))).video.status === "ready" ? true : undefined),
    60_000,
  );
}, 110_000);

afterAll(async () => {
  await kit?.close();
});

describe("the console's jobs", () => {
  it("creates a job from a hosted video through the form, confirms it and follows it live to completed; the list shows it", async () => {
    const { context, page, log } = await kit.signedIn();
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Jobs" }).click();
    await page.getByRole("heading", { name: "Jobs" }).waitFor();
    await page.getByRole("link", { name: "New job" }).click();
    await page.getByRole("heading", { name: "New job" }).waitFor();
    const video = page.getByLabel("Video", { exact: true });
    await expect.poll(() => video.inputValue()).toBe(videoId);
    await axe(page);

    // WebM does not carry H.264: the server names outputs[0].video[0].codec, shown beside the codec.
    await page.getByLabel("Type").selectOption({ label: "WebM file" });
    await page.getByLabel("Video codec").selectOption({ label: "H.264" });
    await page.getByRole("button", { name: "Create job" }).click();
    const codecError = page.locator("#job-codec-error");
    await codecError.waitFor();
    expect(await codecError.textContent()).toMatch(/\S/);
    expect(await page.getByLabel("Video codec").getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByLabel("Video codec").getAttribute("aria-describedby")).toBe("job-codec-error");
    await axe(page);

    // A valid job: HLS H.264 at the input's size, into managed hosting, held for the estimate.
    await page.getByLabel("Type").selectOption({ label: "HLS (streaming)" });
    await page.getByLabel("Show me the cost estimate before encoding starts").check();
    await page.getByRole("button", { name: "Create job" }).click();
    await page.waitForURL(/#\/jobs\/job_[A-Za-z0-9]+$/);
    const jobId = new URL(page.url()).hash.slice("#/jobs/".length);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    const status = page.locator("strong.status");
    await expect.poll(() => status.textContent(), { timeout: 60_000 }).toBe("awaiting confirmation");
    await page.getByRole("heading", { name: "Estimate" }).waitFor();
    expect(await page.locator("[data-estimate]").textContent()).toMatch(/€|EUR/);
    await axe(page);
    await page.getByRole("button", { name: "Confirm and start encoding" }).click();
    await expect.poll(() => status.textContent(), { timeout: 90_000 }).toBe("completed");
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await page.locator('table[data-cost="actual"]').waitFor();
    expect(await page.locator("tr[data-output] .status").allTextContents()).toEqual(["completed"]);
    expect(await page.locator("tr[data-output] progress").getAttribute("value")).toBe("100");
    await axe(page);
    await shot(page, "console-job.png");

    // The list shows it, and so does the "completed" filter.
    await page.getByRole("link", { name: "← Jobs" }).click();
    const row = page.locator(`tr[data-job="${jobId}"]`);
    await row.waitFor();
    expect(await row.locator(".status").textContent()).toBe("completed");
    await page.getByLabel("Status").selectOption({ label: "completed" });
    await row.waitFor();
    await page.getByLabel("Status").selectOption({ label: "canceled" });
    await page.getByText("No canceled jobs").waitFor();
    await page.getByLabel("Status").selectOption({ label: "Any status" });
    await row.waitFor();
    await axe(page);
    await shot(page, "console-jobs.png");

    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await context.close();
  }, 110_000);

  it("cancels a job awaiting confirmation after asking", async () => {
    const { context, page } = await kit.signedIn();
    await page.goto(`${kit.base}/#/jobs/new`);
    await page.getByRole("heading", { name: "New job" }).waitFor();
    await page.getByLabel("Video", { exact: true }).selectOption(videoId);
    await page.getByLabel("Show me the cost estimate before encoding starts").check();
    await page.getByRole("button", { name: "Create job" }).click();
    await page.waitForURL(/#\/jobs\/job_/);
    const status = page.locator("strong.status");
    await expect.poll(() => status.textContent(), { timeout: 60_000 }).toBe("awaiting confirmation");
    let asked = "";
    page.once("dialog", (d) => {
      asked = d.message();
      void d.accept();
    });
    await page.getByRole("button", { name: "Cancel job" }).click();
    await expect.poll(() => status.textContent()).toBe("canceled");
    expect(asked).toMatch(/^Cancel job job_/);
    await context.close();
  }, 90_000);
});
