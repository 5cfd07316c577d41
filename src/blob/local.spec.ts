// LocalBlob (managed storage of the embedded mode) beyond the blob contract it passes in
// http.spec.ts: a file got is a hard link where it can be, and keeps its bytes whatever happens to
// the key after, as the contract promises of every adapter.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalBlob } from "./local.js";

const root = mkdtempSync(path.join(tmpdir(), "local-blob-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("LocalBlob", () => {
  const blob = new LocalBlob(root);
  const dir = mkdtempSync(path.join(root, "files-"));
  const local = (name: string, content: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, content);
    return file;
  };

  it("gets a file by a hard link on its own file system, by a copy where the target exists", async () => {
    await blob.put("linked/source.mp4", local("source", "a source file"));
    const linked = path.join(dir, "linked");
    expect(await blob.getToFile("linked/source.mp4", linked)).toEqual({ size: 13 });
    expect(statSync(linked).ino).toBe(statSync(blob.pathOf("linked/source.mp4")).ino);
    // A target that exists is replaced by a copy, as copyFile replaces it.
    const taken = local("taken", "something else");
    expect(await blob.getToFile("linked/source.mp4", taken)).toEqual({ size: 13 });
    expect(readFileSync(taken, "utf8")).toBe("a source file");
    expect(statSync(taken).ino).not.toBe(statSync(blob.pathOf("linked/source.mp4")).ino);
  });

  it("a file got keeps its bytes when the key is overwritten or deleted; a file put may change after", async () => {
    const source = local("first", "first");
    await blob.put("kept.txt", source);
    writeFileSync(source, "changed after the put");
    const out = path.join(dir, "kept");
    await blob.getToFile("kept.txt", out);
    expect(readFileSync(out, "utf8")).toBe("first");
    await blob.put("kept.txt", local("second", "second"));
    expect(readFileSync(out, "utf8")).toBe("first");
    await blob.delete("kept.txt");
    expect(readFileSync(out, "utf8")).toBe("first");
  });

  it("a missing key is not_found, by link or by copy", async () => {
    await expect(blob.getToFile("missing.mp4", path.join(dir, "missing"))).rejects.toMatchObject({ kind: "not_found" });
  });
});
