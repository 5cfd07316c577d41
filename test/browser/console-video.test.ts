// The console's video page (#/videos/<id>) in Chromium: a clip uploaded through the API with the
// bootstrap key plays in the service's own player page (an iframe); its title is edited in place
// and stays after a reload; a title the server refuses is shown beside the field; Archive, after
// the confirmation, shows the video archived and its playback URL refused. A video still encoding
// is followed live (Watch) until it plays; an unknown id says so. axe-core passes, and
// the screenshot of docs/console.md is taken here.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, until, type Auth } from "../harness.js";
import { makeTestInput } from "../media.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let key: Auth;
let videoId: string;
let clip: string;

/** CreateUpload, PUT, CompleteUpload with the bootstrap key; the video's id. */
async function upload(file: string, title: string): Promise<string> {
  const created = await ok(
    call(
      kit.base,
      "VideoService/CreateUpload",
      { app_id: kit.key.app, filename: path.basename(file), content_type: "video/mp4", size_bytes: statSync(file).size, title },
      key,
    ),
  );
  const put = await fetch(created.upload_url, { method: "PUT", body: readFileSync(file), headers: { "content-type": "video/mp4" } });
  expect(put.status).toBe(200);
  await ok(call(kit.base, "VideoService/CompleteUpload", { id: created.video.id }, key));
  return created.video.id;
}

beforeAll(async () => {
  kit = await startConsole();
  key = { bearer: kit.key.bearer, org: kit.key.org };
  clip = await makeTestInput(path.join(kit.dataDir, "clip.mp4"), { seconds: 2, width: 320, height: 240, fps: 25, audio: true });
  videoId = await upload(clip, "Page clip");
  await until(
    "the clip encoded",
    async () => {
      const { video } = await ok(call(kit.base, "VideoService/Get", { id: videoId }, key));
      if (video.status === "error") throw new Error(`encoding failed: ${JSON.stringify(video)}`);
      return video.status === "ready" && video.encoded_at ? true : undefined;
    },
    60_000,
  );
}, 90_000);

afterAll(async () => {
  await kit?.close();
});

describe("the video page", () => {
  it("plays the video, edits it in place, shows a refused title beside the field, and archives it after confirming", async () => {
    const { context, page, log } = await kit.signedIn();
    await page.goto(`${kit.base}/#/videos/${videoId}`);
    await page.getByRole("heading", { name: "Page clip", level: 1 }).waitFor();

    // The player page of the service, framed.
    const frame = page.locator("iframe");
    expect(await frame.getAttribute("src")).toMatch(new RegExp(`/v/${videoId}$`));
    expect(await frame.getAttribute("title")).toContain("Page clip");
    await page.frameLocator("iframe").locator("video#player").waitFor();
    // Renditions, links with Copy, facts.
    expect(await page.locator("table tbody tr").count()).toBeGreaterThan(0);
    await page.getByRole("button", { name: "Copy the playback URL" }).waitFor();
    await page.getByRole("button", { name: "Copy the embed code" }).waitFor();
    const { video } = await ok(call(kit.base, "VideoService/Get", { id: videoId }, key));
    expect((await fetch(video.playback_url)).status).toBe(200);
    await axe(page);

    // Edited in place, kept after a reload.
    await page.getByLabel("Title").fill("Renamed in the console");
    await page.getByLabel("Tags").fill("demo, console");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { name: "Renamed in the console", level: 1 }).waitFor();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    await page.reload();
    await page.getByRole("heading", { name: "Renamed in the console", level: 1 }).waitFor();
    expect(await page.getByLabel("Title").inputValue()).toBe("Renamed in the console");
    expect(await page.getByLabel("Tags").inputValue()).toBe("demo, console");

    // A title the server refuses: the error beside the field, the field marked invalid.
    await page.getByLabel("Title").fill("x".repeat(300));
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("#title-error.field-error").waitFor();
    expect(await page.getByLabel("Title").getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByLabel("Title").getAttribute("aria-describedby")).toBe("title-error");
    await axe(page);
    await shot(page, "console-video.png");

    // Archive, confirmed: archived on screen, playback refused.
    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Archive" }).click();
    await expect.poll(() => page.locator(".status").first().textContent()).toBe("archived");
    await expect.poll(async () => (await fetch(video.playback_url)).status).toBeGreaterThanOrEqual(400);
    const refused = (await fetch(video.playback_url)).status;
    expect(refused).toBeLessThan(500);
    expect(await page.locator("iframe").count()).toBe(0);
    await axe(page);

    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await context.close();
  }, 60_000);

  it("follows a video's encoding live, without a reload, until it plays", async () => {
    const { context, page, log } = await kit.signedIn();
    const id = await upload(clip, "Live clip");
    await page.goto(`${kit.base}/#/videos/${id}`);
    await page.getByRole("heading", { name: "Live clip", level: 1 }).waitFor();
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await expect.poll(() => page.locator(".status").first().textContent(), { timeout: 60_000 }).toBe("ready");
    await page.locator("iframe").waitFor();
    await page.getByRole("progressbar", { name: "Encoding progress" }).waitFor({ state: "detached", timeout: 30_000 });
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(log.errors).toEqual([]);
    await context.close();
  }, 60_000);

  it("says so when the video does not exist", async () => {
    const { context, page } = await kit.signedIn();
    await page.goto(`${kit.base}/#/videos/vid_doesnotexist000000`);
    await page.getByRole("heading", { name: "Video not found" }).waitFor();
    await page.getByRole("link", { name: "Back to videos" }).waitFor();
    await axe(page);
    await context.close();
  }, 30_000);
});
