// The web console in Debian's Chromium, as a newcomer meets it: the address `serve` prints opens
// the console; the one-time link signs in; a clip dragged onto the upload area shows its progress
// and goes to processing and then ready without a reload; an API key is created and copied. Every
// page is checked with axe-core, and the screenshots of docs/console.md are taken here.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordLog } from "../browser.js";
import { makeTestInput } from "../media.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let base: string;
let clip: Buffer;

beforeAll(async () => {
  kit = await startConsole();
  base = kit.base;
  clip = readFileSync(await makeTestInput(path.join(kit.dataDir, "clip.mp4"), { seconds: 4, width: 320, height: 240, fps: 25, audio: true }));
}, 120_000);

afterAll(async () => {
  await kit?.close();
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

  it("uploads a dragged clip with its progress, and shows it processing and then ready without a reload", async () => {
    const { context, page, log } = await kit.signedIn();
    await axe(page);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
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
    await expect.poll(() => row.locator(".status").textContent(), { timeout: 60_000 }).toMatch(/processing|ready/);
    await expect.poll(() => row.locator(".status").textContent(), { timeout: 120_000 }).toBe("ready");
    await page.locator(".playable").waitFor();
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot(page, "console-videos.png");
    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await context.close();
  });

  it("creates an API key, shows its secret once and copies it", async () => {
    const { context, page } = await kit.signedIn();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    await page.getByLabel("Name").fill("from the console");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = (await page.locator("[data-secret]").textContent())!;
    expect(secret).toMatch(/^ak_[A-Za-z0-9]{20,}$/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await expect.poll(() => page.locator("tr", { hasText: "from the console" }).count()).toBe(1);
    await axe(page);
    await shot(page, "console-keys.png");
    // The key works.
    const listed = await fetch(`${base}/media.v1.APIKeyService/List`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}`, "x-organization-id": kit.key.org },
      body: "{}",
    });
    expect(listed.status).toBe(200);
    // A name the server refuses is shown beside the field.
    await page.getByLabel("Name").fill("x".repeat(300));
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator(".field-error").waitFor();
    await context.close();
  });
});
