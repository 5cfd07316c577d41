// Sign-in as people do it, in Debian's Chromium against a real OpenID provider (oidc-provider, a
// certified implementation, with its own login form; test/oidc/provider.ts): the account page, the
// provider's login, the session cookie and a Connect call made with it; a key rotation at the
// provider; the tokens the service must refuse, each with its reason in the log; the embedded
// one-time link; cross-site posts; sign-out everywhere; suspension and deletion. Pages are checked
// with axe-core, and the screenshots in docs/images are taken here.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import pino from "pino";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../main/server.js";
import { mintDevToken } from "../../src/identity.js";
import { SecretBox } from "../../src/secrets.js";
import { mintSignInLink } from "../../src/sessions.js";
import { launchChromium } from "../browser.js";
import { call, freePort, ok, tempDataDir, testConfig } from "../harness.js";
import { signInWithFetch, startOidcProvider, type RunningProvider } from "../oidc/provider.js";

const exec = promisify(execFile);
const require = createRequire(import.meta.url);
const ROOT = path.resolve(import.meta.dirname, "../..");
const SHOTS = path.join(ROOT, "docs/images");
const CLIENT = { client_id: "media-console", client_secret: "console-secret-0123456789" };
const OTHER = { client_id: "other-app", client_secret: "other-secret-0123456789", redirect_uris: ["http://127.0.0.1:9/cb"] };
const ID_TOKEN_TTL = 4;

let provider: RunningProvider;
let server: RunningServer;
let browser: Browser;
let base: string;
let dataDir: string;
let config: ReturnType<typeof testConfig>;
let evil: Server;
let evilBase: string;
const logs: Record<string, unknown>[] = [];

/** Log lines (pino JSON) whose message matches, newest last. */
const logged = (msg: RegExp) => logs.filter((l) => msg.test(String(l.msg)));

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** An ID token straight from the provider's token endpoint, for a client and account of the test's choosing. */
async function idToken(client: { client_id: string; client_secret: string }, redirectUri: string, login: string): Promise<string> {
  const { verifier, challenge } = pkce();
  const url = new URL(`${provider.issuer}/auth`);
  const params = { client_id: client.client_id, response_type: "code", scope: "openid email profile", redirect_uri: redirectUri, state: "s", nonce: "n" };
  for (const [k, v] of Object.entries({ ...params, code_challenge: challenge, code_challenge_method: "S256" })) url.searchParams.set(k, v);
  const back = await signInWithFetch(url.href, login);
  const code = back.searchParams.get("code");
  if (!code) throw new Error(`no code in ${back.href}`);
  const res = await fetch(`${provider.issuer}/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier }),
  });
  const body = (await res.json()) as { id_token?: string };
  if (!body.id_token) throw new Error(`no id_token: ${JSON.stringify(body)}`);
  return body.id_token;
}

/** Our /auth/login's redirect to the provider (state, nonce and challenge ours). */
async function ourAuthorizationUrl(): Promise<URL> {
  const res = await fetch(`${base}/auth/login`, { redirect: "manual" });
  expect(res.status).toBe(303);
  return new URL(res.headers.get("location")!);
}

async function axe(page: Page): Promise<void> {
  await page.evaluate(readFileSync(require.resolve("axe-core/axe.min.js"), "utf8"));
  const result = await page.evaluate(async () => {
    const run = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; help: string; nodes: unknown[] }[] }> } }).axe.run;
    return (await run()).violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length})`);
  });
  expect(result, "axe-core violations").toEqual([]);
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name), fullPage: true });
}

/** A Connect call from the page itself, with its session cookie and the client header. */
async function pageCall(page: Page, route: string, body: unknown, header = true): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ({ route, body, header }) => {
      const res = await fetch(`/media.v1.${route}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(header ? { "x-media-client": "console" } : {}) },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
    { route, body, header },
  );
}

async function signInThroughProvider(context: BrowserContext, login: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}/account`);
  await page.getByRole("link", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.href.startsWith(provider.issuer) || u.href === `${base}/account`);
  if (page.url().startsWith(provider.issuer)) {
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill("any password");
    await page.locator('button[type="submit"]').click();
  }
  await page.waitForURL(`${base}/account`);
  return page;
}

beforeAll(async () => {
  const port = freePort();
  base = `http://127.0.0.1:${port}`;
  provider = await startOidcProvider({
    clients: [{ ...CLIENT, redirect_uris: [`${base}/auth/callback`] }, OTHER],
    accounts: {
      ada: { email: "ada@example.com", email_verified: true, given_name: "Ada", family_name: "Lovelace" },
      mallory: { email: "ada@example.com", email_verified: false, given_name: "Mallory" },
    },
    idTokenTtlSeconds: ID_TOKEN_TTL,
  });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  dataDir = tempDataDir();
  config = testConfig(dataDir, {
    MEDIA_HTTP_PORT: String(port),
    MEDIA_PUBLIC_URL: base,
    MEDIA_OIDC_ISSUER: provider.issuer,
    MEDIA_OIDC_CLIENT_ID: CLIENT.client_id,
    MEDIA_OIDC_CLIENT_SECRET: CLIENT.client_secret,
    MEDIA_OIDC_CLOCK_SKEW_SECONDS: "0",
    MEDIA_RATE_LIMIT_SIGN_IN_ACCOUNT: "100/m",
  });
  server = await startServer(config, pino({ level: "info" }, sink));
  browser = await launchChromium();
  // Another site's pages (another port is another origin), posting forms at the service.
  evil = createServer((req, res) => {
    const target = new URL(req.url ?? "/", "http://x").searchParams.get("target") ?? "";
    const body = new URL(req.url ?? "/", "http://x").searchParams.get("body") ?? "";
    res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><html lang="en"><title>elsewhere</title>
<form id="f" method="post" action="${target}" enctype="text/plain"><input type="hidden" name='${body}' value='"}'><button>go</button></form></html>`);
  });
  await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
  evilBase = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await provider?.close();
  evil?.close();
});

describe("sign-in through an OpenID provider", () => {
  it("Chromium signs in on the provider's login page, lands signed in and calls GetMe with its session", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/account`);
    await expect.poll(() => page.locator("h1").textContent()).toBe("Not signed in");
    await axe(page);
    await shot(page, "account-signed-out.png");
    await page.getByRole("link", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.href.startsWith(`${provider.issuer}/interaction/`));
    await page.locator('input[name="login"]').fill("ada");
    await page.locator('input[name="password"]').fill("any password");
    await page.locator('button[type="submit"]').click();
    await page.waitForURL(`${base}/account`);
    expect(await page.locator("h1").textContent()).toBe("Your account");
    expect(await page.locator("main").textContent()).toContain("ada@example.com");
    await axe(page);
    await shot(page, "account-signed-in.png");

    const cookie = (await context.cookies(base)).find((c) => c.name === "media_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false, path: "/" });
    const me = await pageCall(page, "UserService/GetMe", {});
    expect(me.status).toBe(200);
    expect(me.body.user.user).toMatchObject({ email: "ada@example.com", first_name: "Ada", last_name: "Lovelace", email_verified: true });
    // The same cookie without the header a form cannot send is refused.
    expect((await pageCall(page, "UserService/GetMe", {}, false)).status).toBe(403);
    expect(logged(/^signed in$/).at(-1)).toMatchObject({ user_id: me.body.user.user.id, address: "127.0.0.1", via: "oidc" });
    await context.close();
  });

  it("the provider rotates its signing key and the next sign-in works without a restart", async () => {
    const before = provider.currentKid();
    const after = await provider.rotateKeys({ dropPrevious: true });
    expect(after).not.toBe(before);
    // A key set is fetched again at most every 2 s, however many unknown kids arrive.
    await new Promise((r) => setTimeout(r, 2_500));
    const context = await browser.newContext();
    const page = await signInThroughProvider(context, "ada");
    expect(await page.locator("h1").textContent()).toBe("Your account");
    expect((await pageCall(page, "UserService/GetMe", {})).body.user.user.email).toBe("ada@example.com");
    await context.close();
  });

  it("refuses a token for another audience, an expired one, a wrong nonce and an unverified email, each with its reason in the log", async () => {
    // Another client's ID token, as a bearer token.
    const foreign = await idToken(OTHER, OTHER.redirect_uris[0]!, "ada");
    expect((await call(base, "UserService/GetMe", {}, { bearer: foreign })).status).toBe(401);
    expect(logged(/session token refused/).at(-1)?.reason).toMatch(/aud/);

    // Our client's ID token is a good bearer token until it expires (no clock skew here).
    const ours = await idToken(CLIENT, `${base}/auth/callback`, "ada");
    expect((await call(base, "UserService/GetMe", {}, { bearer: ours })).status).toBe(200);
    await new Promise((r) => setTimeout(r, (ID_TOKEN_TTL + 1.5) * 1000));
    expect((await call(base, "UserService/GetMe", {}, { bearer: ours })).status).toBe(401);
    expect(logged(/session token refused/).at(-1)?.reason).toMatch(/expired/);

    // Our own sign-in, its nonce swapped on the way to the provider.
    const forged = await ourAuthorizationUrl();
    forged.searchParams.set("nonce", "forged-nonce");
    const back = await signInWithFetch(forged.href, "ada");
    const refused = await fetch(back, { redirect: "manual" });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("set-cookie")).toBeNull();
    expect(logged(/^sign-in refused$/).at(-1)?.reason).toMatch(/nonce/);

    // An account whose provider does not vouch for the email it shows.
    const unverified = await signInWithFetch((await ourAuthorizationUrl()).href, "mallory");
    const refusedToo = await fetch(unverified, { redirect: "manual" });
    expect(refusedToo.status).toBe(401);
    expect(await refusedToo.text()).toContain("is verified");
    expect(logged(/^sign-in refused$/).at(-1)?.reason).toMatch(/email_verified/);

    // A callback replayed (the state is single use) signs nobody in.
    const replay = await fetch(back, { redirect: "manual" });
    expect(replay.status).toBe(400);
  });
});

describe("the embedded one-time link", () => {
  it("signs in once from media login-link, refuses a second use and an expired link", async () => {
    const { stdout } = await exec(process.execPath, [path.join(ROOT, "bin/media.js"), "login-link", "--email", "owner@media.local"], {
      env: { ...process.env, MEDIA_DATA_DIR: dataDir, MEDIA_PUBLIC_URL: base, MEDIA_LOG_LEVEL: "silent" },
    });
    const link = stdout.trim();
    expect(link).toMatch(new RegExp(`^${base}/auth/link/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`));

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(link);
    await axe(page);
    await shot(page, "sign-in-link.png");
    await page.getByRole("button", { name: "Sign in" }).click();
    // A link signs in to the console.
    await page.waitForURL(`${base}/`);
    await page.goto(`${base}/account`);
    expect(await page.locator("main").textContent()).toContain("owner@media.local");
    expect(logged(/^signed in$/).at(-1)).toMatchObject({ via: "link" });

    const second = await (await browser.newContext()).newPage();
    await second.goto(link);
    await second.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => second.locator("main").textContent()).toContain("already used");

    const box = new SecretBox(readFileSync(path.join(dataDir, "server-secret"), "utf8").trim());
    const expired = `${base}/auth/link/${mintSignInLink(box, "owner@media.local", Date.now() - 16 * 60_000)}`;
    const stale = await (await browser.newContext()).newPage();
    const res = await stale.goto(expired);
    expect(res?.status()).toBe(400);
    expect(await stale.locator("main").textContent()).toContain("expired");
    await context.close();
  });
});

describe("sessions", () => {
  it("refuses cross-site posts carrying the session cookie", async () => {
    const context = await browser.newContext();
    const page = await signInThroughProvider(context, "ada");
    // Another origin of the same site: the browser sends the Lax cookie with its form posts.
    const attacker = await context.newPage();
    const updateMe = encodeURIComponent(`${base}/media.v1.UserService/UpdateMe`);
    await attacker.goto(`${evilBase}/?target=${updateMe}&body=${encodeURIComponent('{"first_name":"pwned","x":"')}`);
    const [post] = await Promise.all([
      attacker.waitForResponse((r) => r.url().includes("UpdateMe")),
      attacker.locator("#f").evaluate((f: HTMLFormElement) => f.submit()),
    ]);
    expect(post.status()).toBeGreaterThanOrEqual(400);
    const attacker2 = await context.newPage();
    await attacker2.goto(`${evilBase}/?target=${encodeURIComponent(`${base}/auth/logout-all`)}`);
    const [logout] = await Promise.all([
      attacker2.waitForResponse((r) => r.url().endsWith("/auth/logout-all")),
      attacker2.locator("#f").evaluate((f: HTMLFormElement) => f.submit()),
    ]);
    expect(logout.status()).toBe(403);
    // Still signed in, and unchanged.
    const me = await pageCall(page, "UserService/GetMe", {});
    expect(me.status).toBe(200);
    expect(me.body.user.user.first_name).toBe("Ada");

    // The same checks without a browser: the cookie needs this service's Origin and the client header.
    const cookie = (await context.cookies(base)).find((c) => c.name === "media_session")!;
    const post2 = (headers: Record<string, string>) =>
      fetch(`${base}/media.v1.UserService/UpdateMe`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: `media_session=${cookie.value}`, ...headers },
        body: JSON.stringify({ first_name: "pwned" }),
      });
    expect((await post2({ origin: evilBase, "x-media-client": "console" })).status).toBe(403);
    expect((await post2({ origin: base })).status).toBe(403);
    expect((await post2({ "x-media-client": "console" })).status).toBe(403);
    const fine = await post2({ origin: base, "x-media-client": "console", "content-type": "application/json" });
    expect(fine.status).toBe(200);
    await pageCall(page, "UserService/UpdateMe", { first_name: "Ada" });
    await context.close();
  });

  it("signs out here, and everywhere", async () => {
    const one = await browser.newContext();
    const two = await browser.newContext();
    const a = await signInThroughProvider(one, "ada");
    const b = await signInThroughProvider(two, "ada");
    await a.getByRole("button", { name: "Sign out everywhere" }).click();
    await a.waitForURL(`${base}/account`);
    expect(await a.locator("h1").textContent()).toBe("Not signed in");
    expect((await pageCall(b, "UserService/GetMe", {})).status).toBe(401);
    await b.reload();
    expect(await b.locator("h1").textContent()).toBe("Not signed in");
    expect(logged(/^signed out$/).at(-1)).toMatchObject({ everywhere: true, address: "127.0.0.1" });

    const c = await signInThroughProvider(one, "ada");
    await c.getByRole("button", { name: "Sign out", exact: true }).click();
    await c.waitForURL(`${base}/account`);
    expect(await c.locator("h1").textContent()).toBe("Not signed in");
    expect((await one.cookies(base)).find((k) => k.name === "media_session")).toBeUndefined();
    await one.close();
    await two.close();
  });

  it("suspension and deletion by staff end the user's sessions at once; an organization's suspension refuses its keys", async () => {
    const boot = server.bootstrap!;
    const staff = { bearer: await mintDevToken(config, boot.user_email) };
    const context = await browser.newContext();
    const page = await signInThroughProvider(context, "ada");
    const ada = (await pageCall(page, "UserService/GetMe", {})).body.user.user.id as string;

    await ok(call(base, "UserService/SetStatus", { user_id: ada, status: "suspended" }, staff));
    expect((await pageCall(page, "UserService/GetMe", {})).status).toBe(401);
    await page.reload();
    expect(await page.locator("h1").textContent()).toBe("Not signed in");
    // Suspended, the provider's sign-in is refused too.
    await page.getByRole("link", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("main").textContent()).toContain("This account is suspended");
    await ok(call(base, "UserService/SetStatus", { user_id: ada, status: "active" }, staff));

    const org = { bearer: boot.api_key, org: boot.organization_id };
    expect((await call(base, "APIKeyService/List", {}, org)).status).toBe(200);
    await ok(call(base, "OrganizationService/SetStatus", { organization_id: boot.organization_id, status: "suspended" }, staff));
    const refused = await call(base, "APIKeyService/List", {}, org);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain("suspended");
    await ok(call(base, "OrganizationService/SetStatus", { organization_id: boot.organization_id, status: "active" }, staff));
    expect((await call(base, "APIKeyService/List", {}, org)).status).toBe(200);

    const again = await signInThroughProvider(context, "ada");
    const deleted = await ok(call(base, "UserService/SetStatus", { user_id: ada, status: "deleted" }, staff));
    expect(deleted.user).toMatchObject({ id: ada, status: "deleted", first_name: "" });
    expect((await pageCall(again, "UserService/GetMe", {})).status).toBe(401);
    expect((await call(base, "UserService/SetStatus", { user_id: ada, status: "active" }, staff)).body.code).toBe("failed_precondition");
    // The same person signing in again is a new user.
    const fresh = await signInThroughProvider(context, "ada");
    const now = (await pageCall(fresh, "UserService/GetMe", {})).body.user.user;
    expect(now.id).not.toBe(ada);
    expect(now.approval_status).toBe("pending");
    await context.close();
  });
});
