// The S3 adapter against a real MinIO over TLS (the test CA): the blob contract for s3 and r2,
// and the failures origin validation relies on: wrong keys, a read-only user, a missing bucket,
// and addresses the network guard refuses.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCa, startMinio, type MinioPeer, type TestCa } from "../../test/peers.js";
import { NetGuard } from "../net-guard.js";
import { blobContract } from "./blob-contract.js";
import { BlobError } from "./port.js";
import { r2Endpoint, S3Blob, type S3Location } from "./s3.js";

let ca: TestCa;
let minio: MinioPeer;
let guard: NetGuard;

beforeAll(async () => {
  ca = makeTestCa();
  minio = await startMinio(ca, ["contract", "other"]);
  guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
}, 60_000);

afterAll(async () => {
  guard?.destroy();
  await minio?.stop();
  ca?.remove();
});

const at = (over: Partial<S3Location> = {}, g = guard) =>
  new S3Blob({ scheme: "s3", bucket: "contract", region: "us-east-1", endpoint: minio.endpoint, ...minio.admin, ...over }, g);

blobContract("S3 (MinIO)", () => at(), { url: (k) => `s3://contract/${k}`, largeBytes: 17 * 1024 * 1024 });
blobContract("R2 (MinIO as the custom endpoint)", () => at({ scheme: "r2", region: "auto" }), { url: (k) => `r2://contract/${k}` });

async function failure(work: Promise<unknown>): Promise<BlobError> {
  const e = await work.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(BlobError);
  return e as BlobError;
}

describe("S3 failures", { timeout: 30_000 }, () => {
  const file = () => {
    const f = path.join(mkdtempSync(path.join(tmpdir(), "s3-spec-")), "x.txt");
    writeFileSync(f, "x");
    return f;
  };

  it("an unknown access key and a wrong secret are denials with a readable cause", async () => {
    const unknown = await failure(at({ accessKeyId: "nobody-knows-me", secretAccessKey: "whatever-secret" }).checkRead(""));
    expect(unknown.kind).toBe("denied");
    expect(unknown.message).toMatch(/access key ID is not known.*InvalidAccessKeyId/);
    const wrong = await failure(at({ secretAccessKey: "not-the-secret-at-all" }).checkRead(""));
    expect(wrong.kind).toBe("denied");
    expect(wrong.message).toMatch(/secret access key does not match.*SignatureDoesNotMatch/);
  });

  it("a read-only user reads but cannot write", async () => {
    const reader = at(minio.readOnly);
    await reader.checkRead("");
    expect(await reader.head("nothing-here")).toBeUndefined();
    const e = await failure(reader.put("ro/probe.txt", file()));
    expect(e.kind).toBe("denied");
    expect(e.message).toMatch(/AccessDenied/);
  });

  it("a missing bucket is not_found, named", async () => {
    const e = await failure(at({ bucket: "no-such-bucket" }).checkRead(""));
    expect(e.kind).toBe("not_found");
    expect(e.message).toMatch(/bucket "no-such-bucket" does not exist/);
  });

  it("goes through the guard: loopback without the allowlist is refused before any request", async () => {
    const strict = new NetGuard({ net: { allow: [], tlsCaFile: ca.caFile } });
    const e = await failure(at({}, strict).checkRead(""));
    expect(e.kind).toBe("forbidden_address");
    expect(e.message).toMatch(/loopback/);
    strict.destroy();
  });

  it("refuses an http:// endpoint unless it comes from the operator", () => {
    expect(() => at({ endpoint: "http://127.0.0.1:9" })).toThrow(BlobError);
    expect(() => at({ endpoint: "http://127.0.0.1:9", allowHttp: true })).not.toThrow();
  });

  it("derives R2 endpoints from the account and jurisdiction", () => {
    const id = "0123456789abcdef0123456789abcdef";
    expect(r2Endpoint(id)).toBe(`https://${id}.r2.cloudflarestorage.com`);
    expect(r2Endpoint(id, "default")).toBe(`https://${id}.r2.cloudflarestorage.com`);
    expect(r2Endpoint(id, "eu")).toBe(`https://${id}.eu.r2.cloudflarestorage.com`);
    expect(r2Endpoint(id, "fedramp")).toBe(`https://${id}.fedramp.r2.cloudflarestorage.com`);
  });
});

describe("without static keys (the operator's managed bucket): the SDK's default credential chain", () => {
  const names = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"];
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  afterAll(() => {
    for (const n of names) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  });
  const keyless = () => at({ accessKeyId: undefined, secretAccessKey: undefined });

  it("signs with the keys of a shared credentials file, and presigns nothing", async () => {
    for (const n of names) delete process.env[n];
    const dir = mkdtempSync(path.join(tmpdir(), "s3-chain-"));
    writeFileSync(
      path.join(dir, "credentials"),
      `[media-test]\naws_access_key_id = ${minio.admin.accessKeyId}\naws_secret_access_key = ${minio.admin.secretAccessKey}\n`,
    );
    writeFileSync(path.join(dir, "config"), "");
    process.env.AWS_SHARED_CREDENTIALS_FILE = path.join(dir, "credentials");
    process.env.AWS_CONFIG_FILE = path.join(dir, "config");
    process.env.AWS_PROFILE = "media-test";
    const file = path.join(dir, "object.bin");
    writeFileSync(file, "from the chain");
    const blob = keyless();
    expect(await blob.put("chain/object.bin", file)).toEqual({ size: 14 });
    expect(await blob.head("chain/object.bin")).toEqual({ size: 14 });
    expect(blob.signedUrl("chain/object.bin", 60)).toBeUndefined();
  });

  it("signs with the environment's keys (AWS_ACCESS_KEY_ID): wrong ones are refused, right ones read", async () => {
    for (const n of names) delete process.env[n];
    process.env.AWS_ACCESS_KEY_ID = "AKIAWRONGWRONGWRONG0";
    process.env.AWS_SECRET_ACCESS_KEY = "wrong-secret-wrong-secret-wrong-secret00";
    expect((await failure(keyless().head("chain/object.bin"))).kind).toBe("denied");
    process.env.AWS_ACCESS_KEY_ID = minio.admin.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = minio.admin.secretAccessKey;
    expect(await keyless().head("chain/object.bin")).toEqual({ size: 14 });
  });
});
