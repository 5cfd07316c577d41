import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { OffloadedMd5 } from "./md5-offload.js";

const md5 = (...chunks: Uint8Array[]) => chunks.reduce((h, c) => h.update(c), createHash("md5")).digest("hex");

describe("MD5 off the event loop", () => {
  it("matches node:crypto for any chunking: empty, small, batch-sized and larger than the high water mark", async () => {
    const empty = new OffloadedMd5();
    expect(await empty.digest()).toBe(md5());
    const chunks = [randomBytes(1), randomBytes(65_536), randomBytes(1024 * 1024), randomBytes(3 * 1024 * 1024 + 7)];
    const h = new OffloadedMd5();
    for (const c of chunks) await h.update(c);
    expect(await h.digest()).toBe(md5(...chunks));
  });

  it("keeps concurrent hashes apart, and its copies survive the caller reusing a chunk's memory", async () => {
    const shared = Buffer.alloc(256 * 1024);
    const a = new OffloadedMd5();
    const b = new OffloadedMd5();
    const seenA: Buffer[] = [];
    const seenB: Buffer[] = [];
    for (let i = 0; i < 40; i++) {
      shared.fill(i);
      seenA.push(Buffer.from(shared));
      await a.update(shared);
      shared.fill(255 - i);
      seenB.push(Buffer.from(shared));
      await b.update(shared);
    }
    const [da, db] = await Promise.all([a.digest(), b.digest()]);
    expect(da).toBe(md5(...seenA));
    expect(db).toBe(md5(...seenB));
    const dropped = new OffloadedMd5();
    await dropped.update(randomBytes(10));
    dropped.discard();
  });

  it("a sender far ahead waits for the worker: at most the high water mark is in flight", async () => {
    const h = new OffloadedMd5();
    const chunk = randomBytes(1024 * 1024);
    const all: Buffer[] = [];
    for (let i = 0; i < 64; i++) {
      await h.update(chunk);
      all.push(chunk);
      expect((h as unknown as { state: { inFlight: number } }).state.inFlight).toBeLessThanOrEqual(9 * 1024 * 1024);
    }
    expect(await h.digest()).toBe(md5(...all));
  });

  it("given a file, the worker writes every byte there, complete when the digest resolves", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "md5-offload-"));
    const file = path.join(dir, "out.bin");
    writeFileSync(file, "older and longer content than the empty stream below, truncated");
    const empty = new OffloadedMd5(file);
    expect(await empty.digest()).toBe(md5());
    expect(readFileSync(file).byteLength).toBe(0);
    const chunks = [randomBytes(3), randomBytes(1024 * 1024 - 3), randomBytes(2 * 1024 * 1024 + 11)];
    const h = new OffloadedMd5(file);
    for (const c of chunks) await h.update(c);
    expect(await h.digest()).toBe(md5(...chunks));
    expect(readFileSync(file).equals(Buffer.concat(chunks))).toBe(true);
  });

  it("a file that cannot be written fails the stream with the system's reason, and the worker serves the next", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "md5-offload-"));
    const h = new OffloadedMd5(path.join(dir, "no-such-folder", "out.bin"));
    const failed = (async () => {
      for (let i = 0; i < 4; i++) await h.update(randomBytes(1024 * 1024));
      return h.digest();
    })();
    await expect(failed).rejects.toThrow(/ENOENT/);
    h.discard();
    const next = new OffloadedMd5();
    await next.update(Buffer.from("still here"));
    expect(await next.digest()).toBe(md5(Buffer.from("still here")));
  });
});
