// The console's Webhooks page against a real HTTPS receiver on loopback (trusted through a test CA):
// a URL the server refuses is shown beside the field; an endpoint added through the form shows its
// secret once and copies it; "Send test" reaches the receiver signed with that secret and the
// delivery appears in the log with its status and response code; the secret is rotated (the next
// test is signed with the new one) and the endpoint disabled, enabled and deleted. axe-core checks
// both views, and docs/images/console-webhooks.png is taken here.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCa, type TestCa } from "../peers.js";
import { startRecordingReceiver, type RecordingReceiver } from "../receivers.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let ca: TestCa;
let receiver: RecordingReceiver;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startRecordingReceiver(ca);
  kit = await startConsole({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_TLS_CA_FILE: ca.caFile, MEDIA_WEBHOOK_RETRY_SCALE: "0.00001" });
}, 120_000);

afterAll(async () => {
  await kit?.close();
  await receiver?.stop();
  ca?.remove();
});

describe("the webhooks page", () => {
  it("adds an endpoint, copies its secret, sends a signed test, shows the delivery, rotates the secret and deletes", async () => {
    const { context, page, log } = await kit.signedIn();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: kit.base });
    page.on("dialog", (d) => void d.accept());
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor();
    await page.getByText("No endpoints yet").waitFor();

    // A URL the server refuses: the reason beside the URL field.
    await page.getByLabel("Endpoint URL").fill("http://example.com/hook");
    await page.getByLabel("job.succeeded").check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const urlError = page.locator("#url-error");
    await urlError.waitFor();
    expect(await urlError.textContent()).toMatch(/https/);
    expect(await page.getByLabel("Endpoint URL").getAttribute("aria-invalid")).toBe("true");

    // The endpoint on the local receiver, its secret shown once and copied.
    const url = `${receiver.url}/hooks`;
    await page.getByLabel("Endpoint URL").fill(url);
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = (await page.locator("[data-secret]").textContent())!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    expect(await page.locator("#url-error").count()).toBe(0);
    const row = page.locator("tr", { hasText: url });
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain("job.succeeded");
    await axe(page);
    receiver.setSecrets([secret]);

    // Its page: a test event reaches the receiver, signed, and its delivery shows up succeeded with 200.
    await row.getByRole("link", { name: url }).click();
    await page.getByRole("heading", { name: "Webhook endpoint" }).waitFor();
    expect(await page.locator("[data-endpoint-status]").textContent()).toBe("enabled");
    await page.getByRole("button", { name: "Send test" }).click();
    const [first] = await receiver.waitFor(1, 20_000);
    expect(first!.verified, String(first!.headers["media-signature"])).toBe(true);
    expect((first!.json as { type: string }).type).toBe("job.succeeded");
    const delivery = page.locator("[data-delivery]").first();
    await expect.poll(() => delivery.locator("[data-delivery-status]").textContent(), { timeout: 20_000 }).toBe("succeeded");
    expect(await delivery.locator("[data-response]").textContent()).toBe("200");
    expect(await delivery.textContent()).toContain(first!.headers["webhook-id"]);

    // Rotation, confirmed: a new secret shown once, and the next test is signed with it.
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await expect.poll(() => page.locator("[data-secret]").count()).toBe(1);
    const rotated = (await page.locator("[data-secret]").textContent())!;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    receiver.setSecrets([rotated, secret]);
    await page.getByRole("button", { name: "Send test" }).click();
    const second = (await receiver.waitFor(2, 20_000))[1]!;
    expect(second.verifiedBy).toContain(0);
    await expect.poll(() => page.locator("[data-delivery]").count(), { timeout: 20_000 }).toBe(2);
    await expect.poll(() => page.locator("[data-delivery-status]", { hasText: "succeeded" }).count(), { timeout: 20_000 }).toBe(2);

    // Disable (no test events then) and enable again.
    await page.getByRole("button", { name: "Disable" }).click();
    await expect.poll(() => page.locator("[data-endpoint-status]").textContent()).toBe("disabled");
    expect(await page.getByRole("button", { name: "Send test" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Enable" }).click();
    await expect.poll(() => page.locator("[data-endpoint-status]").textContent()).toBe("enabled");

    // Keyboard: the actions are reachable with Tab.
    await page.getByRole("button", { name: "Send test" }).focus();
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Disable");

    await axe(page);
    await shot(page, "console-webhooks.png");

    // Delete, confirmed: back to an empty list.
    await page.getByRole("button", { name: "Delete" }).click();
    await page.getByText("No endpoints yet").waitFor();
    expect(log.cspViolations()).toEqual([]);
    expect(log.errors).toEqual([]);
    await context.close();
  }, 90_000);
});
