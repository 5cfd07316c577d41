// The console's Organization and Usage pages in Chromium. A second person signs in once (pending)
// and reads their user id on the account page; the owner (operator staff by default) approves them
// on the Organization page, adds them as a member, changes their role; the app's source retention is
// edited and stays after a reload, and an out-of-range value is shown beside the field. The Usage
// page sums the actual cost of a clip's completed job by day and by app. axe-core passes on both, and
// the screenshots of docs/console.md are taken here.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintDevToken } from "../../src/identity.js";
import { SecretBox } from "../../src/secrets.js";
import { mintSignInLink } from "../../src/sessions.js";
import { call, ok, testConfig, until, type Auth } from "../harness.js";
import { makeTestInput } from "../media.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let key: Auth;
let encoded: Promise<void>;

/** A clip uploaded through the API and encoded in the background: one completed job with a cost. */
async function encodeClip(): Promise<void> {
  const clip = await makeTestInput(path.join(kit.dataDir, "clip.mp4"), { seconds: 1, width: 160, height: 120, fps: 25, audio: false });
  const created = await ok(
    call(
      kit.base,
      "VideoService/CreateUpload",
      { app_id: kit.key.app, filename: "clip.mp4", content_type: "video/mp4", size_bytes: statSync(clip).size, title: "Usage clip" },
      key,
    ),
  );
  const put = await fetch(created.upload_url, { method: "PUT", body: readFileSync(clip), headers: { "content-type": "video/mp4" } });
  expect(put.status).toBe(200);
  await ok(call(kit.base, "VideoService/CompleteUpload", { id: created.video.id }, key));
  await until(
    "a completed job with its actual cost",
    async () => {
      const { jobs } = await ok(call(kit.base, "JobService/List", { status: "completed" }, key));
      return jobs.some((j: { total_actual_cost?: number }) => j.total_actual_cost !== undefined) ? true : undefined;
    },
    60_000,
  );
}

beforeAll(async () => {
  kit = await startConsole();
  key = { bearer: kit.key.bearer, org: kit.key.org };
  encoded = encodeClip();
  encoded.catch(() => undefined);
}, 120_000);

afterAll(async () => {
  await kit?.close();
});

describe("the organization and usage pages", () => {
  it("approves a sign-up, adds them as a member, changes their role and edits the app's retention", async () => {
    // Bob signs in once (a token of the development issuer provisions him, pending), then through a
    // one-time link, and reads his user id on the account page.
    const token = await mintDevToken(testConfig(kit.dataDir), "bob@example.com");
    const me = await ok(call(kit.base, "UserService/GetMe", {}, { bearer: token }));
    expect(me.user.user.approval_status).toBe("pending");
    const box = new SecretBox(readFileSync(path.join(kit.dataDir, "server-secret"), "utf8").trim());
    const bobContext = await kit.browser.newContext();
    const bob = await bobContext.newPage();
    await bob.goto(`${kit.base}/auth/link/${mintSignInLink(box, "bob@example.com")}`);
    await bob.getByRole("button", { name: "Sign in" }).click();
    await bob.waitForURL((u) => !u.pathname.startsWith("/auth/"));
    await bob.goto(`${kit.base}/account`);
    const bobId = (await bob.locator("dt:text-is('User id') + dd").textContent())!;
    expect(bobId).toBe(me.user.user.id);
    expect(await bob.locator("dt:text-is('Approval') + dd").textContent()).toBe("pending");

    const { context, page, log } = await kit.signedIn();
    page.on("dialog", (d) => void d.accept());
    await page.getByRole("link", { name: "Organization" }).click();
    await page.getByRole("heading", { name: "Organization", level: 1 }).waitFor();

    // Operator staff approve him by the id he gives.
    await page.getByLabel("Pending user id").fill(bobId);
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await page.getByText("bob@example.com is now approved.").waitFor();
    await bob.goto(`${kit.base}/account`);
    expect(await bob.locator("dt:text-is('Approval') + dd").textContent()).toBe("approved");

    // Approval fills the add-member email; he joins as a viewer.
    expect(await page.getByLabel("Member email").inputValue()).toBe("bob@example.com");
    await page.getByLabel("Member role").selectOption({ label: "viewer" });
    await page.getByRole("button", { name: "Add member" }).click();
    await page.getByText("bob@example.com added as viewer.").waitFor();
    const role = page.getByLabel("Role of bob@example.com", { exact: true });
    await expect.poll(() => role.count()).toBe(1);
    expect(await role.locator("option:checked").textContent()).toBe("viewer");

    // His role changes to admin, and stays after a reload.
    await role.selectOption({ label: "admin" });
    await page.getByRole("button", { name: "Save the role of bob@example.com" }).click();
    await expect.poll(() => call(kit.base, "UserService/ListMembers", { role: "admin" }, key).then((r) => JSON.stringify(r.body))).toContain("bob@example.com");

    // The app's source retention: an out-of-range value beside the field, then a good one, saved.
    const card = page.locator(`section[data-app="${kit.key.app}"]`);
    const retention = card.getByLabel(/Delete sources after/);
    await retention.fill("99999");
    await card.getByRole("button", { name: "Save hosting settings" }).click();
    const retentionError = card.locator(`#${kit.key.app}-retention-error`);
    await retentionError.waitFor();
    expect(await retentionError.textContent()).toMatch(/0 \(keep sources\) to 3650/);
    expect(await retention.getAttribute("aria-invalid")).toBe("true");
    await retention.fill("30");
    await card.getByRole("button", { name: "Save hosting settings" }).click();
    await card.getByText("sources deleted after 30 days").waitFor();
    expect(await retentionError.count()).toBe(0);
    const app = await ok(call(kit.base, "AppService/Get", { id: kit.key.app }, key));
    expect(app.app.hosting.delete_source_after_days).toBe(30);

    await page.reload();
    await page.getByRole("heading", { name: "Organization", level: 1 }).waitFor();
    await page.locator(`section[data-app="${kit.key.app}"]`).getByText("sources deleted after 30 days").waitFor();
    expect(await page.getByLabel("Role of bob@example.com", { exact: true }).locator("option:checked").textContent()).toBe("admin");
    await page.getByLabel("Pending user id").waitFor();
    await axe(page);
    await shot(page, "console-organization.png");

    // Bob, now an admin, sees the organization but not the approvals (he is not staff).
    await bob.goto(`${kit.base}/#/organization`);
    await bob.getByRole("heading", { name: "Organization", level: 1 }).waitFor();
    await bob.getByText("You are not staff").waitFor();
    expect(await bob.getByLabel("Pending user id").count()).toBe(0);

    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await bobContext.close();
    await context.close();
  });

  it("sums the completed jobs' actual costs by day and by app", async () => {
    const { context, page, log } = await kit.signedIn();
    await page.goto(`${kit.base}/#/usage`);
    await page.getByRole("heading", { name: "Usage", level: 1 }).waitFor();
    await encoded;
    await page.reload();
    await page.getByRole("heading", { name: "Cost per day (UTC)" }).waitFor();
    const { jobs } = await ok(call(kit.base, "JobService/List", { status: "completed" }, key));
    const total = jobs.reduce((s: number, j: { total_actual_cost?: number }) => s + (j.total_actual_cost ?? 0), 0);
    const today = new Date().toISOString().slice(0, 10);
    const day = page.locator("tr", { has: page.locator(`th:text-is("${today}")`) });
    expect(await day.locator("td").first().textContent()).toBe(String(jobs.length));
    const shown = (await page.locator("[data-total]").textContent())!;
    expect(Number(shown.replace(/[^\d.]/g, ""))).toBeCloseTo(total, 3);
    await page.getByRole("heading", { name: "Cost per app" }).waitFor();
    await page.locator("tr", { has: page.locator('th:text-is("Default app")') }).waitFor();
    await axe(page);
    await shot(page, "console-usage.png");
    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await context.close();
  });
});
