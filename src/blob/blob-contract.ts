// The contract of the blob port: one suite every writable adapter passes (S3 and R2 against MinIO
// in s3.spec.ts, GCS against fake-gcs-server in gcs.spec.ts, the local folder in local.spec.ts).
// Every case writes under its own random prefix, so adapters may share one bucket.
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BlobError, type BlobStore } from "./port.js";

export interface ContractOptions {
  /** Expected url() of a key, e.g. (k) => `s3://bucket/${k}`. */
  readonly url: (key: string) => string;
  /** Size of the large-file case: past the S3 adapter's part size, so multipart runs. */
  readonly largeBytes?: number;
}

export function blobContract(name: string, make: () => BlobStore, options: ContractOptions): void {
  describe(`${name}: blob contract`, { timeout: 60_000 }, () => {
    const dir = mkdtempSync(path.join(tmpdir(), "blob-contract-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const prefix = () => `contract-${randomUUID().slice(0, 8)}`;
    const local = (content: Buffer | string) => {
      const file = path.join(dir, randomUUID());
      writeFileSync(file, content);
      return file;
    };
    const target = () => path.join(dir, `${randomUUID()}.out`);

    it("puts, heads and gets back the same bytes", async () => {
      const blob = make();
      const key = `${prefix()}/nested/dir/file one.bin`;
      const bytes = randomBytes(100_000);
      expect(await blob.put(key, local(bytes), "application/octet-stream")).toEqual({ size: bytes.length });
      expect(await blob.head(key)).toEqual({ size: bytes.length });
      const out = target();
      expect(await blob.getToFile(key, out)).toEqual({ size: bytes.length });
      expect(readFileSync(out).equals(bytes)).toBe(true);
    });

    it("overwrites: keys are deterministic, the last put wins", async () => {
      const blob = make();
      const key = `${prefix()}/same.txt`;
      await blob.put(key, local("first version, longer"), "text/plain");
      await blob.put(key, local("second"), "text/plain");
      expect(await blob.head(key)).toEqual({ size: 6 });
      const out = target();
      await blob.getToFile(key, out);
      expect(readFileSync(out, "utf8")).toBe("second");
    });

    it("a missing key: head is undefined, get is not_found and leaves no file, delete is fine", async () => {
      const blob = make();
      const key = `${prefix()}/missing.bin`;
      expect(await blob.head(key)).toBeUndefined();
      const out = target();
      const e = await blob.getToFile(key, out).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(BlobError);
      expect((e as BlobError).kind).toBe("not_found");
      expect(existsSync(out)).toBe(false);
      await blob.delete(key);
    });

    it("deletes", async () => {
      const blob = make();
      const key = `${prefix()}/gone.txt`;
      await blob.put(key, local("x"));
      await blob.delete(key);
      expect(await blob.head(key)).toBeUndefined();
    });

    it("checks read access under a prefix, empty or not", async () => {
      const blob = make();
      const p = prefix();
      await blob.checkRead(`${p}/`);
      await blob.put(`${p}/a.txt`, local("a"));
      await blob.checkRead(`${p}/`);
      await blob.checkRead("");
    });

    it("names keys by the location users see", () => {
      expect(make().url("a/b.mp4")).toBe(options.url("a/b.mp4"));
    });

    if (options.largeBytes) {
      it(`moves a large file (${Math.round(options.largeBytes / 1024 / 1024)} MiB)`, async () => {
        const blob = make();
        const key = `${prefix()}/large.bin`;
        const bytes = randomBytes(options.largeBytes!);
        await blob.put(key, local(bytes), "video/mp4");
        expect(await blob.head(key)).toEqual({ size: bytes.length });
        const out = target();
        await blob.getToFile(key, out);
        expect(readFileSync(out).equals(bytes)).toBe(true);
      });
    }
  });
}
