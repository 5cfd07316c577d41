// The web console in Debian's Chromium, as a newcomer meets it: the address `serve` prints opens
// the console; the one-time link signs in; a spoken clip dragged onto the upload area shows its
// progress and goes to processing and then ready without a reload; it plays with its captions; an
// API key is created and copied; a webhook endpoint on a local receiver gets its delivery; the
// video is archived and its playback refused. Every page is checked with axe-core.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordLog } from "../browser.js";
import { makeTestCa, type TestCa } from "../peers.js";
import { startRecordingReceiver, type RecordingReceiver } from "../receivers.js";
import { synthesizeSpeech } from "../speech.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let base: string;
let clip: Buffer;
let ca: TestCa;
let receiver: RecordingReceiver;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startRecordingReceiver(ca);
  kit = await startConsole({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_TLS_CA_FILE: ca.caFile, MEDIA_WEBHOOK_RETRY_SCALE: "0.00001" });
  base = kit.base;
  clip = readFileSync((await synthesizeSpeech(mkdtempSync(path.join(tmpdir(), "console-speech-")))).mp4);
}, 180_000);

afterAll(async () => {
  await kit?.close();
  await receiver?.stop();
  ca?.remove();
});

describe("the console", () => {
  it("answers at the address serve prints: a sign-in page for a stranger, under a strict CSP", async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await res.text();
    const js = /src="(\/console\/assets\/main-[A-Za-z0-9_-]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${base}${js}`, { headers: { "accept-encoding": "gzip" } });
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");

    const context = await kit.browser.newContext();
    const page = await context.newPage();
    const log = recordLog(page);
    await page.goto(`${base}/`);
    await page.getByRole("link", { name: "Sign in" }).waitFor();
    await axe(page);
    await shot(page, "console-signed-out.png");
    expect(log.cspViolations()).toEqual([]);
    await context.close();
  });

  it("walks a newcomer's path: link, drag a clip, progress, processing, playable without a reload, play with captions, a key copied, a webhook delivered, archive", async () => {
    const { context, page, log } = await kit.signedIn();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    page.on("dialog", (d) => void d.accept());
    await axe(page);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));

    // A spoken clip dragged onto the upload area, captions asked for.
    await page.getByLabel("Generate captions from speech").check();
    const dataTransfer = await page.evaluateHandle((b64: string) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], "first clip.mp4", { type: "video/mp4" }));
      return dt;
    }, clip.toString("base64"));
    await page.dispatchEvent(".dropzone", "dragover", { dataTransfer });
    await page.dispatchEvent(".dropzone", "drop", { dataTransfer });
    await page.getByRole("progressbar", { name: "Upload of first clip.mp4" }).waitFor();
    const row = page.locator("tr", { hasText: "first clip" });
    const seen = new Set<string>();
    await expect
      .poll(
        async () => {
          const status =
            (await row
              .locator(".status")
              .textContent()
              .catch(() => null)) ?? "";
          seen.add(status);
          return status;
        },
        { timeout: 180_000, interval: 100 },
      )
      .toBe("ready");
    expect([...seen].filter((st) => st === "processing" || st === "uploading").length).toBeGreaterThan(0);
    await page.locator(".playable").waitFor();
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot(page, "console-videos.png");

    // Its page: once the rest of the ladder and the captions are encoded (followed live), the player
    // plays it with its captions showing.
    await row.getByRole("link", { name: "first clip" }).click();
    await page.getByRole("heading", { name: "Captions" }).waitFor({ timeout: 180_000 });
    await page.getByText("Transcript", { exact: true }).click();
    expect((await page.locator("[data-transcript]").first().textContent())!.trim().length).toBeGreaterThan(10);
    await page.getByRole("link", { name: "Back to videos" }).click();
    await row.getByRole("link", { name: "first clip" }).click();
    const frame = page.frameLocator("iframe");
    await frame.locator("video").waitFor({ timeout: 60_000 });
    const player = page.frames().find((f) => f.url().includes("/v/"))!;
    await player.evaluate(() => {
      const v = document.querySelector("video")!;
      v.muted = true;
      return v.play();
    });
    await player.waitForFunction(
      () => {
        const v = document.querySelector("video")!;
        return v.currentTime > 1 && Array.from(v.textTracks).some((t) => t.mode === "showing" && t.cues && t.cues.length > 0);
      },
      undefined,
      { timeout: 60_000 },
    );
    await axe(page);

    // An API key, created and copied.
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("from the console");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await page.locator("[data-secret]").textContent())!;
    expect(secret).toMatch(/^ak_[A-Za-z0-9]{20,}$/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await shot(page, "console-keys.png");
    const listed = await fetch(`${base}/media.v1.APIKeyService/List`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}`, "x-organization-id": kit.key.org },
      body: "{}",
    });
    expect(listed.status).toBe(200);

    // A webhook endpoint on a local receiver, and its delivery in the log.
    await page.getByRole("link", { name: "Webhooks" }).click();
    const hook = `${receiver.url}/hooks`;
    await page.getByLabel("Endpoint URL").fill(hook);
    await page.getByLabel("job.succeeded").check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    receiver.setSecrets([(await page.locator("[data-secret]").textContent())!]);
    await page.locator("tr", { hasText: hook }).getByRole("link", { name: hook }).click();
    await page.getByRole("button", { name: "Send test" }).click();
    const [delivered] = await receiver.waitFor(1, 30_000);
    expect(delivered!.verified).toBe(true);
    await expect.poll(() => page.locator("[data-delivery] [data-delivery-status]").first().textContent(), { timeout: 30_000 }).toBe("succeeded");

    // Archived, confirmed: playback is refused.
    await page.getByRole("link", { name: "Videos" }).click();
    const video = (await row.getAttribute("data-video"))!;
    const playback = (
      (await await fetch(`${base}/media.v1.VideoService/Get`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${secret}`, "x-organization-id": kit.key.org },
        body: JSON.stringify({ id: video }),
      }).then((r) => r.json())) as { video: { playback_url: string } }
    ).video.playback_url;
    expect((await fetch(playback)).status).toBe(200);
    await row.getByRole("link", { name: "first clip" }).click();
    await page.getByRole("button", { name: "Archive" }).click();
    await expect.poll(async () => (await fetch(playback)).status, { timeout: 10_000 }).toBeGreaterThanOrEqual(400);
    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await context.close();
  }, 300_000);

  it("passes axe-core on every page", async () => {
    const { context, page } = await kit.signedIn();
    for (const name of ["Videos", "Jobs", "Presets", "Origins", "Webhooks", "API keys", "Organization", "Usage"]) {
      await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name, exact: true }).click();
      await page.getByRole("heading", { level: 1 }).first().waitFor();
      await page.waitForLoadState("networkidle").catch(() => undefined);
      await axe(page);
    }
    await context.close();
  });
});
