// Portal sessions: JWTs from a configured issuer, verified with jose. The embedded mode carries
// its own development issuer, whose key lives in the data folder, so `media token` can mint.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { exportJWK, generateKeyPair, importJWK, importSPKI, jwtVerify, SignJWT, type JWK, type JWTPayload } from "jose";
import type { Config } from "./config.js";
import type { IdentityClaims } from "./directory.js";

type VerifyKey = Parameters<typeof jwtVerify>[1];

const DEV_KEY_FILE = "dev-issuer.jwk.json";

/** Creates the development issuer's key pair in the data folder if it is not there yet. */
export async function ensureDevIssuer(dataDir: string): Promise<void> {
  await devKeyPair(dataDir);
}

async function devKeyPair(dataDir: string): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const file = path.join(dataDir, DEV_KEY_FILE);
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as { privateJwk: JWK; publicJwk: JWK };
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const pair = { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) };
  writeFileSync(file, JSON.stringify(pair), { mode: 0o600 });
  return pair;
}

export class SessionVerifier {
  private constructor(
    private readonly key: VerifyKey,
    private readonly config: Config,
  ) {}

  static async create(config: Config): Promise<SessionVerifier> {
    const key = config.jwt.publicKeyPem
      ? await importSPKI(config.jwt.publicKeyPem, config.jwt.algorithm)
      : await importJWK((await devKeyPair(config.dataDir)).publicJwk, "ES256");
    return new SessionVerifier(key, config);
  }

  /** The identity a valid token carries, or undefined for any invalid, expired or foreign token. */
  async verify(token: string): Promise<IdentityClaims | undefined> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.key, { issuer: this.config.jwt.issuer, audience: this.config.jwt.audience }));
    } catch {
      return undefined;
    }
    const email = typeof payload.email === "string" ? payload.email : undefined;
    if (!email || !/^[^@\s]+@[^@\s]+$/.test(email)) return undefined;
    return {
      email,
      emailVerified: payload.email_verified === true,
      firstName: typeof payload.given_name === "string" ? payload.given_name : "",
      lastName: typeof payload.family_name === "string" ? payload.family_name : "",
      ...(typeof payload.picture === "string" ? { pictureUrl: payload.picture } : {}),
    };
  }
}

/** Mints a session token from the embedded development issuer (`media token --email`). */
export async function mintDevToken(config: Config, email: string, ttlSeconds = 12 * 3600): Promise<string> {
  const { privateJwk } = await devKeyPair(config.dataDir);
  const key = await importJWK(privateJwk, "ES256");
  return new SignJWT({ email, email_verified: true })
    .setProtectedHeader({ alg: "ES256" })
    .setIssuer(config.jwt.issuer)
    .setAudience(config.jwt.audience)
    .setSubject(email.toLowerCase())
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(key);
}
