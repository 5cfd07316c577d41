// The GCS adapter against fake-gcs-server (the JSON API over http, as an operator endpoint), and
// the key-file checks. fake-gcs-server accepts any credentials, so Google's key check itself is
// not covered here: a wrong key is exercised only up to the token request the guard refuses.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceAccountJson, startFakeGcs, type GcsPeer } from "../../test/peers.js";
import { NetGuard } from "../net-guard.js";
import { blobContract } from "./blob-contract.js";
import { GcsBlob, parseServiceAccount, type ServiceAccount } from "./gcs.js";
import { BlobError } from "./port.js";

let gcs: GcsPeer;
let guard: NetGuard;
let account: ServiceAccount;

beforeAll(async () => {
  gcs = await startFakeGcs(["contract"]);
  guard = new NetGuard({ net: { allow: ["127.0.0.1/32"] } });
  const parsed = parseServiceAccount(serviceAccountJson());
  if ("error" in parsed) throw new Error(parsed.error);
  account = parsed.account;
}, 60_000);

afterAll(async () => {
  guard?.destroy();
  await gcs?.stop();
});

blobContract("GCS (fake-gcs-server)", () => new GcsBlob({ bucket: "contract", account, endpoint: gcs.endpoint }, guard), {
  url: (k) => `gs://contract/${k}`,
  largeBytes: 8 * 1024 * 1024,
});

describe("GCS", { timeout: 30_000 }, () => {
  it("a missing bucket is not_found, named", async () => {
    const e = await new GcsBlob({ bucket: "no-such-bucket", account, endpoint: gcs.endpoint }, guard).checkRead("").catch((err: unknown) => err);
    expect(e).toBeInstanceOf(BlobError);
    expect((e as BlobError).kind).toBe("not_found");
    expect((e as BlobError).message).toMatch(/bucket "no-such-bucket" does not exist/);
  });

  it("goes through the guard: the emulator on loopback is refused without the allowlist", async () => {
    const strict = new NetGuard({ net: { allow: [] } });
    const e = await new GcsBlob({ bucket: "contract", account, endpoint: gcs.endpoint }, strict).head("x").catch((err: unknown) => err);
    expect((e as BlobError).kind).toBe("forbidden_address");
    strict.destroy();
  });

  it("asks for OAuth tokens through the guard's agents when the endpoint is Google's", async () => {
    class RecordingGuard extends NetGuard {
      readonly used: string[] = [];
      override agent(protocol: "http:" | "https:") {
        this.used.push(protocol);
        return super.agent(protocol);
      }
    }
    const recording = new RecordingGuard({ net: { allow: [] } });
    // Offline the token host does not resolve; online Google refuses the made-up key. Either way
    // the exchange went through the guard and fails as a BlobError.
    const e = await new GcsBlob({ bucket: "contract", account }, recording).head("x").catch((err: unknown) => err);
    expect(e).toBeInstanceOf(BlobError);
    expect(["unreachable", "denied"]).toContain((e as BlobError).kind);
    expect(recording.used).toContain("https:");
    recording.destroy();
  });

  it("accepts a key file of Google's shape and says what is wrong with others", () => {
    expect("account" in parseServiceAccount(serviceAccountJson())).toBe(true);
    const errorOf = (json: string) => {
      const r = parseServiceAccount(json);
      return "error" in r ? r.error : "";
    };
    const good = JSON.parse(serviceAccountJson()) as Record<string, unknown>;
    const variant = (patch: Record<string, unknown>) => JSON.stringify({ ...good, ...patch });
    expect(errorOf("{not json")).toMatch(/JSON/);
    expect(errorOf("[]")).toMatch(/object/);
    expect(errorOf(variant({ type: "authorized_user" }))).toMatch(/service_account/);
    expect(errorOf(variant({ client_email: "nope" }))).toMatch(/client_email/);
    expect(errorOf(variant({ private_key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" }))).toMatch(/private_key/);
    // A key file must not steer the token request or the API to another host.
    expect(errorOf(variant({ token_uri: "https://169.254.169.254/token" }))).toMatch(/token_uri/);
    expect(errorOf(variant({ universe_domain: "evil.example" }))).toMatch(/universe_domain/);
  });
});
