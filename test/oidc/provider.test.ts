// The OpenID Connect provider fixture (test/oidc/provider.ts): discovery, the key set and its
// rotation, and sign-in by the authorization code flow with PKCE, by fetch and by Chromium.
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../browser.js";
import { signInWithFetch, startOidcProvider, type RunningProvider } from "./provider.js";

const CLIENT = { client_id: "media", client_secret: "media-secret", redirect_uris: ["http://127.0.0.1:1/callback"] };
const ALICE = { email: "alice@example.com", email_verified: true, given_name: "Alice", family_name: "Liddell" };

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  code_challenge_methods_supported: string[];
  token_endpoint_auth_methods_supported: string[];
}

async function json<T>(url: string): Promise<T> {
  const res = await fetch(url);
  expect(res.status, url).toBe(200);
  return (await res.json()) as T;
}

/** An authorization request of CLIENT, and what the token request needs to go with it. */
function authorization(d: Discovery, redirectUri = CLIENT.redirect_uris[0]!) {
  const verifier = randomBytes(32).toString("base64url");
  const state = randomBytes(8).toString("hex");
  const nonce = randomBytes(8).toString("hex");
  const url = new URL(d.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: CLIENT.client_id,
    redirect_uri: redirectUri,
    response_type: "code",
    scope: "openid email profile",
    state,
    nonce,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
  }).toString();
  return { url: url.href, verifier, state, nonce, redirectUri };
}

async function redeem(d: Discovery, code: string, verifier: string, redirectUri: string, auth: "basic" | "post") {
  const body = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (auth === "basic") headers.authorization = `Basic ${Buffer.from(`${CLIENT.client_id}:${CLIENT.client_secret}`).toString("base64")}`;
  else {
    body.set("client_id", CLIENT.client_id);
    body.set("client_secret", CLIENT.client_secret);
  }
  const res = await fetch(d.token_endpoint, { method: "POST", headers, body });
  const tokens = (await res.json()) as { id_token?: string; access_token?: string; error?: string };
  expect(res.status, JSON.stringify(tokens)).toBe(200);
  return tokens as { id_token: string; access_token: string };
}

describe("OpenID Connect provider fixture", () => {
  let op: RunningProvider;
  let d: Discovery;

  beforeAll(async () => {
    op = await startOidcProvider({ clients: [CLIENT], accounts: { alice: ALICE }, idTokenTtlSeconds: 120 });
    d = await json<Discovery>(`${op.issuer}/.well-known/openid-configuration`);
  });
  afterAll(() => op?.close());

  async function signIn(login: string, auth: "basic" | "post" = "basic") {
    const a = authorization(d);
    const back = await signInWithFetch(a.url, login);
    expect(back.origin + back.pathname).toBe(a.redirectUri);
    expect(back.searchParams.get("state")).toBe(a.state);
    expect(back.searchParams.get("iss")).toBe(op.issuer);
    const tokens = await redeem(d, back.searchParams.get("code")!, a.verifier, a.redirectUri, auth);
    return { ...tokens, nonce: a.nonce };
  }

  it("publishes a discovery document on http://127.0.0.1", () => {
    expect(op.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(d.issuer).toBe(op.issuer);
    expect(d.authorization_endpoint).toBe(`${op.issuer}/auth`);
    expect(d.token_endpoint).toBe(`${op.issuer}/token`);
    expect(d.jwks_uri).toBe(`${op.issuer}/jwks`);
    expect(d.code_challenge_methods_supported).toEqual(["S256"]);
    expect(d.token_endpoint_auth_methods_supported.sort()).toEqual(["client_secret_basic", "client_secret_post"]);
  });

  it("signs in by the code flow with PKCE: an ID token of the current key with the account's claims and the nonce", async () => {
    const { id_token, nonce } = await signIn("alice");
    const header = decodeProtectedHeader(id_token);
    expect(header).toMatchObject({ alg: "RS256", kid: op.currentKid() });
    const { payload } = await jwtVerify(id_token, createRemoteJWKSet(new URL(d.jwks_uri)), { issuer: op.issuer, audience: CLIENT.client_id });
    expect(payload).toMatchObject({ sub: "alice", nonce, ...ALICE });
    expect(payload.exp! - payload.iat!).toBe(120);
  });

  it("takes client_secret_post, and accounts added later", async () => {
    op.setAccount("bob", { email: "bob@example.com", email_verified: false });
    const { id_token } = await signIn("bob", "post");
    const { payload } = await jwtVerify(id_token, createRemoteJWKSet(new URL(d.jwks_uri)));
    expect(payload).toMatchObject({ sub: "bob", email: "bob@example.com", email_verified: false });
    expect(payload.given_name).toBeUndefined();
  });

  it("requires PKCE and a known login name", async () => {
    const url = new URL(authorization(d).url);
    url.searchParams.delete("code_challenge");
    url.searchParams.delete("code_challenge_method");
    const res = await fetch(url, { redirect: "manual" });
    expect(new URL(res.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
    await expect(signInWithFetch(authorization(d).url, "mallory")).rejects.toThrow(/not signed in/);
  });

  it("rotates its signing key: the JWKS publishes the new kid and ID tokens carry it", async () => {
    const jwks = async () => (await json<{ keys: { kid: string }[] }>(d.jwks_uri)).keys.map((k) => k.kid);
    const first = op.currentKid();
    expect(await jwks()).toEqual([first]);

    const second = await op.rotateKeys();
    expect(second).not.toBe(first);
    expect(op.currentKid()).toBe(second);
    expect(await jwks()).toEqual([second, first]);
    expect(decodeProtectedHeader((await signIn("alice")).id_token).kid).toBe(second);
    expect((await json<Discovery>(`${op.issuer}/.well-known/openid-configuration`)).issuer).toBe(op.issuer);

    const third = await op.rotateKeys({ dropPrevious: true });
    expect(await jwks()).toEqual([third]);
    expect(decodeProtectedHeader((await signIn("alice")).id_token).kid).toBe(third);
  });

  it("signs in a browser by its login page: login name, password, Sign-in", async () => {
    const captured: URL[] = [];
    const rp = createServer((req, res) => {
      const url = new URL(req.url!, "http://127.0.0.1");
      if (url.pathname === "/callback") captured.push(url); // not /favicon.ico
      res.end("signed in");
    });
    await new Promise<void>((resolve) => rp.listen(0, "127.0.0.1", resolve));
    const redirectUri = `http://127.0.0.1:${(rp.address() as AddressInfo).port}/callback`;
    const browserOp = await startOidcProvider({ clients: [{ ...CLIENT, redirect_uris: [redirectUri] }], accounts: { alice: ALICE } });
    const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
    try {
      const bd = await json<Discovery>(`${browserOp.issuer}/.well-known/openid-configuration`);
      const a = authorization(bd, redirectUri);
      const page = await browser.newPage();
      const outside: string[] = [];
      page.on("request", (r) => void (new URL(r.url()).hostname !== "127.0.0.1" && outside.push(r.url())));
      await page.goto(a.url);
      expect(await page.title()).toBe("Sign-in");
      await page.fill('input[name="login"]', "alice");
      await page.fill('input[name="password"]', "anything");
      await page.click('button[type="submit"]');
      await page.waitForURL((u) => u.href.startsWith(redirectUri));
      expect(outside).toEqual([]);
      expect(captured).toHaveLength(1);
      expect(captured[0]!.searchParams.get("state")).toBe(a.state);
      const tokens = await redeem(bd, captured[0]!.searchParams.get("code")!, a.verifier, redirectUri, "basic");
      expect(decodeProtectedHeader(tokens.id_token).kid).toBe(browserOp.currentKid());
    } finally {
      await browser.close();
      await browserOp.close();
      rp.closeAllConnections();
      await new Promise((resolve) => rp.close(resolve));
    }
  });
});
