// The real-browser harness: Debian's Chromium (/usr/bin/chromium, no Playwright browser download)
// driven headless by playwright-core, with helpers the player tests and a later end-to-end test of
// the whole server need: open a page and get its HTTP status, record its console (CSP violations
// included), start playback and wait until the video's currentTime passes a mark, read the player's
// window.__player state.
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

/** Debian's chromium package (apt-get install chromium); scripts/test.sh installs it. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * Flags for a root container: no sandbox (it needs user namespaces or a setuid helper), /tmp
 * instead of a small /dev/shm, media that plays without a user gesture, no sound card, no
 * first-run or background noise.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  "--no-sandbox",
  "--disable-dev-shm-usage",
  "--autoplay-policy=no-user-gesture-required",
  "--mute-audio",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
];

/** What the player page exposes as window.__player (gateway/player.ts). */
export interface PlayerState {
  /** Signed URLs fetched from the renew URL and switched to. */
  readonly renewals: number;
  /** "hls.js" or "native"; "" until the engine is chosen. */
  readonly engine: string;
  /** The playback URL in use. */
  readonly source: string;
  /** Where playback resumed after the last renewal (seconds); null before any. */
  readonly resumedAt: number | null;
  /** The message the page shows when it gives up; null while all is well. */
  readonly error: string | null;
  /** The page was asked to start by itself (?autoplay=1). */
  readonly autoplay: boolean;
}

/** The video element's state, for assertions and failure messages. */
export interface VideoState {
  readonly currentTime: number;
  readonly paused: boolean;
  readonly ended: boolean;
  readonly readyState: number;
  readonly error: string | null;
}

/** A page's console messages and uncaught errors, recorded from when recordLog was called. */
export interface PageLog {
  readonly console: readonly string[];
  readonly errors: readonly string[];
  /** Console messages that report a Content-Security-Policy violation. */
  cspViolations(): string[];
}

/** Whether Debian's Chromium is installed. */
export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** Launches headless Chromium with CHROMIUM_ARGS (and `extraArgs`); close it with browser.close(). */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  if (!chromiumAvailable()) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium`);
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/** Records a page's console and uncaught errors; call before navigating. */
export function recordLog(page: Page): PageLog {
  const messages: string[] = [];
  const errors: string[] = [];
  page.on("console", (m) => messages.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => errors.push(e.stack ?? e.message));
  return {
    console: messages,
    errors,
    cspViolations: () => messages.filter((m) => /Content Security Policy|Refused to (load|execute|apply|connect|create)/i.test(m)),
  };
}

/** Navigates and answers the HTTP status of the main document (throws when there is no response, e.g. about:blank). */
export async function navigate(page: Page, url: string, timeoutMs = 30_000): Promise<number> {
  const response = await page.goto(url, { waitUntil: "load", timeout: timeoutMs });
  if (!response) throw new Error(`no HTTP response for ${url}`);
  return response.status();
}

/** A new page with its log recorded, navigated to `url`: the page, the document's HTTP status, the log. */
export async function openPage(browser: Browser, url: string): Promise<{ page: Page; status: number; log: PageLog }> {
  const page = await browser.newPage();
  const log = recordLog(page);
  const status = await navigate(page, url);
  return { page, status, log };
}

/** The state of the first element matching `selector` (default "video"). */
export async function videoState(page: Page, selector = "video"): Promise<VideoState> {
  return page.$eval(selector, (el) => {
    const v = el as HTMLVideoElement;
    return {
      currentTime: v.currentTime,
      paused: v.paused,
      ended: v.ended,
      readyState: v.readyState,
      error: v.error ? `${v.error.code} ${v.error.message}` : null,
    };
  });
}

/** window.__player of the player page (throws when the page has none). */
export async function playerState(page: Page): Promise<PlayerState> {
  const state = await page.evaluate(() => (window as unknown as { __player?: PlayerState }).__player ?? null);
  if (state === null) throw new Error("the page has no window.__player");
  return state;
}

/** Calls play() on the video (a press of the play button); a rejected play() is reported in the browser log only. */
export async function startPlayback(page: Page, selector = "video"): Promise<void> {
  await page.$eval(selector, (el) => {
    (el as HTMLVideoElement).play().catch((e: unknown) => console.error(`play() failed: ${String(e)}`));
  });
}

/**
 * Waits until the video's currentTime exceeds `seconds` and answers the currentTime reached.
 * Presses play first unless `play` is false. On timeout, throws with the video's and the player's
 * state.
 */
export async function waitForCurrentTime(page: Page, seconds: number, options: { timeoutMs?: number; selector?: string } = {}): Promise<number> {
  const selector = options.selector ?? "video";
  try {
    await page.waitForFunction(
      ([sel, mark]) => {
        const v = document.querySelector(sel) as HTMLVideoElement | null;
        return v !== null && v.currentTime > mark;
      },
      [selector, seconds] as const,
      { timeout: options.timeoutMs ?? 30_000, polling: 100 },
    );
  } catch (e) {
    const video = await videoState(page, selector).catch(() => null);
    const player = await page.evaluate(() => (window as unknown as { __player?: unknown }).__player ?? null).catch(() => null);
    throw new Error(`currentTime did not pass ${seconds} s: video ${JSON.stringify(video)}, __player ${JSON.stringify(player)}`, { cause: e });
  }
  return (await videoState(page, selector)).currentTime;
}

/**
 * Presses play and waits until playback passes `seconds`; answers the currentTime reached (more
 * than `seconds`). Throws, with the video's and the player's state, when it does not get there
 * within `timeoutMs` (default 30 s).
 */
export async function playbackAdvances(page: Page, seconds: number, options: { timeoutMs?: number; selector?: string; play?: boolean } = {}): Promise<number> {
  if (options.play !== false) await startPlayback(page, options.selector);
  return waitForCurrentTime(page, seconds, options);
}

/** Waits until window.__player.renewals reaches `n`; answers the player's state then. */
export async function waitForRenewals(page: Page, n: number, timeoutMs = 30_000): Promise<PlayerState> {
  await page.waitForFunction((want) => ((window as unknown as { __player?: PlayerState }).__player?.renewals ?? 0) >= want, n, {
    timeout: timeoutMs,
    polling: 100,
  });
  return playerState(page);
}
