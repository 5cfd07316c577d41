// What every console test needs: a built console, an embedded server at a known public URL,
// Chromium, a signed-in context (the one-time link), axe-core and the screenshots of docs/.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";
import { startServer, type RunningServer } from "../../main/server.js";
import { createLogger } from "../../src/log.js";
import { SecretBox } from "../../src/secrets.js";
import { mintSignInLink } from "../../src/sessions.js";
import { launchChromium, recordLog, type PageLog } from "../browser.js";
import { freePort, ROOT, tempDataDir, testConfig } from "../harness.js";

const exec = promisify(execFile);
const require = createRequire(import.meta.url);
const SHOTS = path.join(ROOT, "docs/images");

export interface ConsoleKit {
  readonly base: string;
  readonly server: RunningServer;
  readonly browser: Browser;
  readonly dataDir: string;
  /** Bearer and organization of the bootstrap API key, for setting up through the API. */
  readonly key: { readonly bearer: string; readonly org: string; readonly app: string };
  /** A new context signed in as `email` (default the owner) through a one-time link, on the console's Videos page. */
  signedIn(email?: string): Promise<{ context: BrowserContext; page: Page; log: PageLog }>;
  close(): Promise<void>;
}

export async function startConsole(env: Record<string, string> = {}): Promise<ConsoleKit> {
  await exec(process.execPath, [path.join(ROOT, "console/build.mjs")]);
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = tempDataDir();
  const server = await startServer(testConfig(dataDir, { MEDIA_HTTP_PORT: String(port), MEDIA_PUBLIC_URL: base, ...env }), createLogger("silent"));
  const browser = await launchChromium();
  const box = new SecretBox(readFileSync(path.join(dataDir, "server-secret"), "utf8").trim());
  const boot = server.bootstrap!;
  return {
    base,
    server,
    browser,
    dataDir,
    key: { bearer: boot.api_key, org: boot.organization_id, app: boot.app_id },
    async signedIn(email = "owner@media.local") {
      const context = await browser.newContext();
      const page = await context.newPage();
      const log = recordLog(page);
      await page.goto(`${base}/auth/link/${mintSignInLink(box, email)}`);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${base}/`);
      await page.getByRole("heading", { name: "Videos" }).waitFor();
      return { context, page, log };
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/** axe-core on the page as it is: no serious or critical violation. */
export async function axe(page: Page): Promise<void> {
  await page.evaluate(readFileSync(require.resolve("axe-core/axe.min.js"), "utf8"));
  const found = await page.evaluate(async () => {
    const run = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: unknown[] }[] }> } }).axe
      .run;
    return (await run()).violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.help} (${v.nodes.length})`);
  });
  expect(found, "axe-core serious or critical violations").toEqual([]);
}

/** A full-page screenshot into docs/images (shown by docs/console.md). */
export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name), fullPage: true });
}
