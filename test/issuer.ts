// A token issuer for tests that need many signed-in people in a cluster, where the development
// issuer is refused: it serves an OpenID discovery document and a key set on 127.0.0.1, so the
// gateways find and check its keys the way they do a real provider's, and it signs tokens for any
// email at once. Sign-in itself is tested against a real provider (test/oidc/provider.ts).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";

export interface TestIssuer {
  readonly issuer: string;
  /** The settings that make a cluster trust it. */
  readonly env: Record<string, string>;
  token(email: string, claims?: Record<string, unknown>): Promise<string>;
}

const CLIENT_ID = "media-test";

async function start(): Promise<TestIssuer> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: "test-1", alg: "ES256", use: "sig" };
  let issuer = "";
  const server = http.createServer((req, res) => {
    const body =
      req.url === "/.well-known/openid-configuration"
        ? { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks` }
        : req.url === "/jwks"
          ? { keys: [jwk] }
          : undefined;
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" }).end(JSON.stringify(body ?? { error: "not_found" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    env: { MEDIA_OIDC_ISSUER: issuer, MEDIA_OIDC_CLIENT_ID: CLIENT_ID, MEDIA_OIDC_CLIENT_SECRET: "test-secret" },
    token: (email, claims = {}) =>
      new SignJWT({ email, email_verified: true, ...claims })
        .setProtectedHeader({ alg: "ES256", kid: jwk.kid! })
        .setIssuer(issuer)
        .setAudience(CLIENT_ID)
        .setSubject(email.toLowerCase())
        .setIssuedAt()
        .setExpirationTime("12h")
        .sign(privateKey),
  };
}

let shared: Promise<TestIssuer> | undefined;

/** One issuer per test worker, up for the worker's life. */
export function testIssuer(): Promise<TestIssuer> {
  shared ??= start();
  return shared;
}
