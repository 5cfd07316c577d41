// The console's Presets and Origins pages in Chromium: a preset made through the form and listed,
// a refused slug shown beside its field, an edit, a duplicate and an archive after confirming; an
// S3 origin without a bucket refused on the bucket field, then refused by its credential check
// (shown, the secret never echoed), an HTTPS origin stored, validated, renamed and archived.
// The storage peer is a local HTTPS server: it refuses every S3 request and answers the HTTP
// origin's read check. axe-core on both pages; the screenshots of docs/console.md.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCa, startHttpsPeer, type HttpsPeer, type TestCa } from "../peers.js";
import { axe, shot, startConsole, type ConsoleKit } from "./console-kit.js";

let kit: ConsoleKit;
let ca: TestCa;
let peer: HttpsPeer;

beforeAll(async () => {
  ca = makeTestCa();
  peer = await startHttpsPeer(ca, (req, res) => {
    if (req.url?.startsWith("/files")) return void res.writeHead(404).end("no such file");
    res
      .writeHead(403, { "content-type": "application/xml" })
      .end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The access key ID is not known.</Message></Error>');
  });
  kit = await startConsole({ MEDIA_NET_ALLOW: "127.0.0.1/32,::1/128", MEDIA_TLS_CA_FILE: ca.caFile, MEDIA_S3_ENDPOINT: peer.url });
}, 120_000);

afterAll(async () => {
  await kit?.close();
  await peer?.stop();
  ca?.remove();
});

describe("the console's presets and origins", () => {
  it("creates, refuses, edits, duplicates and archives a preset", async () => {
    const { context, page, log } = await kit.signedIn();
    await page.getByRole("link", { name: "Presets" }).click();
    await page.getByRole("heading", { name: "Presets", level: 1 }).waitFor();
    await page.getByText("No presets of your own yet").waitFor();
    await page.getByRole("link", { name: "Web MP4 1080p" }).waitFor();
    await axe(page);

    await page.getByRole("link", { name: "New preset" }).click();
    await page.getByRole("heading", { name: "New preset" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Console 720p");
    await page.getByLabel("Slug", { exact: true }).fill("console_720p");
    await page.getByLabel("Container").selectOption({ label: "MP4" });
    await page.getByLabel("Video codec").selectOption({ label: "H.264" });
    await page.getByLabel("Height").selectOption("720p");
    await page.getByLabel("CRF").fill("22");
    await page.getByLabel("Audio codec").selectOption({ label: "AAC" });
    await page.getByLabel("Audio bitrate (kb/s)").fill("128");
    await page.getByRole("button", { name: "Create preset" }).click();
    await page.getByRole("link", { name: "Console 720p", exact: true }).waitFor();
    expect(await page.locator("tr", { hasText: "console_720p" }).textContent()).toContain("CRF 22");

    // A slug the server refuses: its message beside the slug field, tied to the input.
    await page.getByRole("link", { name: "New preset" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Broken");
    await page.getByLabel("Slug", { exact: true }).fill("Bad Slug!");
    await page.getByRole("button", { name: "Create preset" }).click();
    const slugError = page.locator("label", { has: page.getByLabel("Slug", { exact: true }) }).locator(".field-error");
    await slugError.waitFor();
    expect(await page.getByLabel("Slug", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByLabel("Slug", { exact: true }).getAttribute("aria-describedby")).toContain("preset-slug-error");
    await page.getByRole("alert").waitFor();
    await axe(page);

    // Edit: a new name and a bitrate instead of a CRF.
    await page.getByRole("link", { name: "All presets" }).click();
    await page.getByRole("link", { name: "Console 720p", exact: true }).click();
    await page.getByRole("heading", { name: "Console 720p" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Console 720p edited");
    await page.getByLabel("Rate control").selectOption({ label: "Variable bitrate" });
    await page.getByLabel("Video bitrate (kb/s)").fill("2500");
    await page.getByRole("button", { name: "Save preset" }).click();
    await page.getByRole("status").filter({ hasText: "Saved" }).waitFor();
    await page.getByRole("heading", { name: "Console 720p edited", level: 1 }).waitFor();
    await axe(page);

    // Duplicate it into a copy of our own.
    expect(await page.getByLabel("Name of the copy").inputValue()).toBe("Console 720p edited (copy)");
    await page.getByLabel("Slug of the copy").fill("console_720p_copy");
    await page.getByRole("button", { name: "Duplicate preset" }).click();
    await page.getByRole("heading", { name: "Console 720p edited (copy)", level: 1 }).waitFor();

    await page.getByRole("link", { name: "All presets" }).click();
    const edited = page.locator("tr", { has: page.getByRole("link", { name: "Console 720p edited", exact: true }) });
    await edited.waitFor();
    expect(await edited.textContent()).toContain("2500 kb/s");
    await page.getByRole("link", { name: "Console 720p edited (copy)" }).waitFor();
    await shot(page, "console-presets.png");

    // Archive after confirming: out of the list; the copy stays.
    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Archive Console 720p edited", exact: true }).click();
    await expect.poll(() => edited.count()).toBe(0);
    await page.reload();
    await page.getByRole("link", { name: "Console 720p edited (copy)" }).waitFor();
    expect(await page.getByRole("link", { name: "Console 720p edited", exact: true }).count()).toBe(0);
    expect(log.cspViolations()).toEqual([]);
    await context.close();
  });

  it("refuses an S3 origin without a bucket, shows its failed credential check, and stores, validates, edits and archives an HTTPS origin", async () => {
    const { context, page, log } = await kit.signedIn();
    const secret = "never-shown-back-0123456789";
    await page.getByRole("link", { name: "Origins" }).click();
    await page.getByRole("heading", { name: "Origins", level: 1 }).waitFor();
    await page.getByText("No origins yet").waitFor();
    await axe(page);

    await page.getByRole("link", { name: "New origin" }).click();
    await page.getByRole("heading", { name: "New origin" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Outputs on S3");
    await page.getByLabel("Region").fill("us-east-1");
    await page.getByLabel("Access key ID").fill("AKIACONSOLETEST");
    await page.getByLabel("Secret access key").fill(secret);
    await page.getByRole("button", { name: "Create origin" }).click();
    await page.locator("#origin-bucket-error").waitFor();
    expect(await page.getByLabel("Bucket").getAttribute("aria-describedby")).toContain("origin-bucket-error");
    await axe(page);

    // With a bucket, the server checks the keys against the (refusing) peer: the result is shown.
    await page.getByLabel("Bucket").fill("media-console");
    await page.getByRole("button", { name: "Create origin" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/not saved/);
    expect(await page.locator(".field-error").count()).toBeGreaterThan(0);
    expect(await page.content()).not.toContain(secret);

    // An HTTPS origin passes its read check and is stored.
    await page.getByLabel("Kind").selectOption("http");
    await page.getByLabel("Name", { exact: true }).fill("Web inputs");
    await page.getByLabel("Base URL").fill(`${peer.url}/files`);
    await page.getByRole("button", { name: "Create origin" }).click();
    await page.getByRole("heading", { name: "Web inputs", level: 1 }).waitFor();
    await page.getByRole("status", { name: "Validation of Web inputs" }).filter({ hasText: "Validation passed" }).waitFor();
    await page.getByRole("button", { name: "Validate" }).click();
    await page.getByRole("status", { name: "Validation of Web inputs" }).filter({ hasText: "Validation passed" }).waitFor();

    await page.getByLabel("Name", { exact: true }).fill("Web inputs, edited");
    await page.getByRole("button", { name: "Save origin" }).click();
    await page.getByRole("heading", { name: "Web inputs, edited", level: 1 }).waitFor();
    await axe(page);

    await page.getByRole("link", { name: "All origins" }).click();
    const row = page.locator("tr", { hasText: "Web inputs, edited" });
    await row.waitFor();
    expect(await row.textContent()).toContain("active");
    await page.getByRole("button", { name: "Validate Web inputs, edited" }).click();
    await page.getByText("Web inputs, edited: validation passed").waitFor();
    await axe(page);
    await shot(page, "console-origins.png");

    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Archive Web inputs, edited" }).click();
    await page.getByText("No origins yet").waitFor();
    await page.getByLabel("Show archived origins").check();
    await expect.poll(() => row.textContent()).toContain("archived");
    expect(log.cspViolations()).toEqual([]);
    await context.close();
  });
});
