// Blobs in a local folder: managed storage of the embedded mode. Keys are relative paths that
// must stay inside the folder.
import { copyFile, link, mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { randomToken } from "../ids.js";
import { BlobError, type BlobStore } from "./port.js";

/** Why a hard link cannot be made where a copy can: another file system, a target that exists, links refused or too many. */
const LINK_REFUSALS = new Set(["EXDEV", "EEXIST", "EPERM", "EMLINK", "ENOTSUP", "EOPNOTSUPP"]);

export class LocalBlob implements BlobStore {
  private readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  async put(key: string, file: string): Promise<{ size: number }> {
    const target = this.pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    // Copy beside, then rename: a reader never sees half a file.
    const partial = `${target}.${randomToken(8)}.part`;
    try {
      await copyFile(file, partial);
      await rename(partial, target);
    } catch (e) {
      await rm(partial, { force: true });
      throw e;
    }
    return { size: (await stat(target)).size };
  }

  /**
   * A hard link where the file can be one (the same file system, the target free): a 10 min
   * source is over 1 GB, and a copy of it delayed its first segment by seconds. A blob is never
   * changed in place (put writes beside and renames), so the link keeps the bytes it was made
   * with; the caller reads the file and never writes into it. A copy elsewhere.
   */
  async getToFile(key: string, file: string): Promise<{ size: number }> {
    const source = this.pathOf(key);
    try {
      await link(source, file).catch(async (e: unknown) => {
        if (!LINK_REFUSALS.has((e as NodeJS.ErrnoException).code ?? "")) throw e;
        await copyFile(source, file);
      });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new BlobError("not_found", `${key} does not exist in managed storage`, { cause: e });
      throw e;
    }
    return { size: (await stat(file)).size };
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const s = await stat(this.pathOf(key));
      return s.isFile() ? { size: s.size } : undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async checkRead(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }

  /** None: managed storage is served by the gateway's edge routes, not by signed URLs. */
  signedUrl(): undefined {
    return undefined;
  }

  url(key: string): string {
    return pathToFileURL(this.pathOf(key)).href;
  }

  /** The file of a key; throws BlobError for a key that would leave the folder. */
  pathOf(key: string): string {
    const segments = key.split("/");
    if (key === "" || key.startsWith("/") || segments.some((s) => s === "" || s === "." || s === "..") || key.includes("\0")) {
      throw new BlobError("invalid", `"${key}" is not a valid storage key`);
    }
    return path.join(this.root, ...segments);
  }
}
