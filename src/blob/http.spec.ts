// The read-only HTTP adapter and URL inputs against a Node HTTPS server with a test CA, through
// the guard; and the local-folder adapter, which passes the blob contract.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCa, startHttpsPeer, type HttpsPeer, type TestCa } from "../../test/peers.js";
import { NetGuard } from "../net-guard.js";
import { blobContract } from "./blob-contract.js";
import { HttpBlob } from "./http.js";
import { LocalBlob } from "./local.js";
import { BlobError, type BlobStore } from "./port.js";
import { fetchUrlToFile, parseStorageUrl } from "./url.js";

let ca: TestCa;
let server: HttpsPeer;
let guard: NetGuard;
const seen: { url: string; token: string | undefined }[] = [];

beforeAll(async () => {
  ca = makeTestCa();
  server = await startHttpsPeer(ca, (req, res) => {
    seen.push({ url: req.url ?? "", token: req.headers["x-token"] as string | undefined });
    if (req.headers["x-token"] !== "let-me-in") return void res.writeHead(403).end("no");
    if (req.url === "/media/in%20put/clip.mp4")
      return void res.writeHead(200, { "content-type": "video/mp4", "content-length": "11" }).end(req.method === "HEAD" ? undefined : "video bytes");
    if (req.url === "/media/moved.mp4") return void res.writeHead(302, { location: "/media/in%20put/clip.mp4" }).end();
    if (req.url === "/media/to-metadata.mp4") return void res.writeHead(302, { location: "https://169.254.169.254/latest/meta-data/" }).end();
    if (req.url === "/media/downgrade.mp4") return void res.writeHead(302, { location: `http://127.0.0.1:1/clip.mp4` }).end();
    res.writeHead(404).end("not here");
  });
  guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
}, 30_000);

afterAll(async () => {
  guard?.destroy();
  await server?.stop();
  ca?.remove();
});

const out = () => path.join(mkdtempSync(path.join(tmpdir(), "http-spec-")), "file");

async function failure(work: Promise<unknown>): Promise<BlobError> {
  const e = await work.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(BlobError);
  return e as BlobError;
}

describe("HttpBlob", () => {
  const blob = (): BlobStore => new HttpBlob({ baseUrl: `${server.url}/media/`, headers: { "X-Token": "let-me-in" } }, guard);

  it("reads <base_url>/<key> with the origin's headers, following redirects", async () => {
    const file = out();
    expect(await blob().getToFile("in put/clip.mp4", file)).toEqual({ size: 11 });
    expect(readFileSync(file, "utf8")).toBe("video bytes");
    expect(await blob().head("in put/clip.mp4")).toEqual({ size: 11 });
    expect(await blob().head("absent.mp4")).toBeUndefined();
    await blob().getToFile("moved.mp4", out());
    expect(blob().url("in put/clip.mp4")).toBe(`${server.url}/media/in%20put/clip.mp4`);
  });

  it("is read-only", async () => {
    expect((await failure(blob().put("x", out()))).kind).toBe("read_only");
    expect((await failure(blob().delete("x"))).kind).toBe("read_only");
  });

  it("checks read access with a probe: a 404 passes, a refusal does not", async () => {
    await blob().checkRead("");
    const denied = new HttpBlob({ baseUrl: `${server.url}/media`, headers: {} }, guard);
    const e = await failure(denied.checkRead(""));
    expect(e.kind).toBe("denied");
    expect(e.message).toMatch(/HTTP 403/);
  });

  it("refuses a redirect to a forbidden address or to plain http, and loopback without the allowlist", async () => {
    const file = out();
    expect((await failure(blob().getToFile("to-metadata.mp4", file))).kind).toBe("forbidden_address");
    expect(existsSync(file)).toBe(false);
    expect((await failure(blob().getToFile("downgrade.mp4", file))).kind).toBe("invalid");
    const strict = new NetGuard({ net: { allow: [], tlsCaFile: ca.caFile } });
    expect((await failure(new HttpBlob({ baseUrl: server.url, headers: {} }, strict).head("x"))).kind).toBe("forbidden_address");
    strict.destroy();
  });
});

describe("URL inputs", () => {
  it("downloads an https URL through the guard", async () => {
    const file = out();
    const found = await fetchUrlToFile(`${server.url}/media/in%20put/clip.mp4`, file, guard, { headers: { "x-token": "let-me-in" } });
    expect(found).toEqual({ size: 11 });
    expect((await failure(fetchUrlToFile(`${server.url}/missing`, out(), guard, { headers: { "x-token": "let-me-in" } }))).kind).toBe("not_found");
    expect((await failure(fetchUrlToFile(`${server.url}/media/x`, out(), guard))).kind).toBe("denied");
    expect((await failure(fetchUrlToFile("http://8.8.8.8/x.mp4", out(), guard))).kind).toBe("invalid");
    expect((await failure(fetchUrlToFile("https://169.254.169.254/x.mp4", out(), guard))).kind).toBe("forbidden_address");
  });

  it("splits storage URLs", () => {
    expect(parseStorageUrl("s3://bucket/a/b.mp4")).toEqual({ provider: "s3", bucket: "bucket", key: "a/b.mp4" });
    expect(parseStorageUrl("gs://bucket/b.mp4")).toEqual({ provider: "gcs", bucket: "bucket", key: "b.mp4" });
    expect(parseStorageUrl("r2://bucket/c")).toEqual({ provider: "r2", bucket: "bucket", key: "c" });
    for (const bad of ["https://bucket/a", "s3://bucket/", "s3://bucket", "s3:/bucket/a"]) expect(() => parseStorageUrl(bad), bad).toThrow(BlobError);
  });
});

const localRoot = mkdtempSync(path.join(tmpdir(), "local-blob-"));
blobContract("LocalBlob", () => new LocalBlob(localRoot), { url: (k) => `file://${path.join(localRoot, k).split("/").map(encodeURIComponent).join("/")}` });

describe("LocalBlob", () => {
  it("keeps keys inside its folder", async () => {
    const blob = new LocalBlob(localRoot);
    for (const key of ["../escape", "/abs", "a/../../b", "a//b", ""]) expect(() => blob.url(key), key).toThrow(BlobError);
  });
});
