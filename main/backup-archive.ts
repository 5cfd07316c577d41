// The backup file: a POSIX tar (pax names where ustar's are too short), so `tar -tvf` reads it,
// holding the data folder's files under data/ and, last, manifest.json: the formats it was written
// in, when, and each file's size and SHA-256.
import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";

/** The layout of the archive and its manifest; raise it when either changes meaning. */
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_NAME = "manifest.json";
export const DATA_PREFIX = "data/";

export interface ManifestFile {
  /** Relative to the data folder, with forward slashes. */
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
  readonly mode: number;
}

export interface Manifest {
  readonly format: "media-backup";
  readonly version: number;
  readonly created_at: string;
  /** The media version that wrote it: the one to restore with after a downgrade. */
  readonly media_version: string;
  /** The file store's log format (FILE_STORE_FORMAT) and the committed length copied. */
  readonly store: { readonly format: number; readonly log_bytes: number };
  readonly files: readonly ManifestFile[];
}

/** A backup this build cannot restore: the reason, in one sentence. */
export class BackupRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupRefused";
  }
}

const BLOCK = 512;
/** ustar's size field holds 11 octal digits; a larger file carries its size in a pax record. */
const USTAR_MAX_SIZE = 8 ** 11 - 1;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, size: number, mode: number, mtime: number, type: "0" | "x"): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, "utf8");
  block.write(octal(mode & 0o7777, 8), 100, "ascii");
  block.write(octal(0, 8), 108, "ascii");
  block.write(octal(0, 8), 116, "ascii");
  block.write(octal(size, 12), 124, "ascii");
  block.write(octal(Math.floor(mtime / 1000), 12), 136, "ascii");
  block.write(" ".repeat(8), 148, "ascii");
  block.write(type, 156, "ascii");
  block.write("ustar\u000000", 257, "ascii");
  block.write(octal(headerSum(block), 7) + " ", 148, "ascii");
  return block;
}

function headerSum(block: Buffer): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return sum;
}

/** One pax record, "<length> <key>=<value>\n", whose length counts its own digits. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body);
  return `${length}${body}`;
}

const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** Writes entries in order to an open file; each file's SHA-256 is computed from the bytes written. */
export class TarWriter {
  private written = 0;

  constructor(private readonly out: FileHandle) {}

  /** Writes `size` bytes from `body` (a shorter or longer body is an error: the header is already out). */
  async file(name: string, size: number, mode: number, mtime: number, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<string> {
    const pax = (Buffer.byteLength(name) > 100 ? paxRecord("path", name) : "") + (size > USTAR_MAX_SIZE ? paxRecord("size", String(size)) : "");
    if (pax !== "") {
      const records = Buffer.from(pax);
      await this.write(header("PaxHeader", records.length, 0o600, mtime, "x"));
      await this.write(records);
      await this.write(padding(records.length));
    }
    await this.write(header(Buffer.byteLength(name) > 100 ? name.slice(-100) : name, size > USTAR_MAX_SIZE ? 0 : size, mode, mtime, "0"));
    const hash = createHash("sha256");
    let copied = 0;
    for await (const chunk of body) {
      copied += chunk.byteLength;
      if (copied > size) throw new Error(`${name} grew while it was copied`);
      hash.update(chunk);
      await this.write(chunk);
    }
    if (copied !== size) throw new Error(`${name} shrank while it was copied (${copied} of ${size} bytes)`);
    await this.write(padding(size));
    return hash.digest("hex");
  }

  /** The two zero blocks that end an archive. */
  async end(): Promise<void> {
    await this.write(Buffer.alloc(2 * BLOCK));
  }

  private async write(bytes: Uint8Array): Promise<void> {
    for (let at = 0; at < bytes.byteLength;) {
      const { bytesWritten } = await this.out.write(bytes, at, bytes.byteLength - at, this.written);
      at += bytesWritten;
      this.written += bytesWritten;
    }
  }
}

export interface TarEntry {
  readonly name: string;
  readonly size: number;
  /** Where its bytes start in the archive. */
  readonly offset: number;
}

async function readAt(handle: FileHandle, length: number, position: number): Promise<Buffer> {
  const bytes = Buffer.alloc(length);
  let at = 0;
  while (at < length) {
    const { bytesRead } = await handle.read(bytes, at, length - at, position + at);
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  return bytes.subarray(0, at);
}

const field = (block: Buffer, start: number, length: number): string => {
  const raw = block.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? length : end).toString("utf8");
};

/** The archive's file entries, in order, from their headers alone (their bytes are not read). */
export async function tarEntries(handle: FileHandle): Promise<TarEntry[]> {
  const total = (await handle.stat()).size;
  const entries: TarEntry[] = [];
  let pax: Record<string, string> = {};
  for (let at = 0; ;) {
    const block = await readAt(handle, BLOCK, at);
    if (block.length < BLOCK) throw new BackupRefused(`the backup is cut short (it ends at byte ${total} inside an entry)`);
    if (block.every((b) => b === 0)) return entries;
    if (Number.parseInt(field(block, 148, 8).trim(), 8) !== headerSum(block)) throw new BackupRefused(`the backup is damaged: a bad tar header at byte ${at}`);
    const type = String.fromCharCode(block[156]!);
    const size = Number(pax.size ?? Number.parseInt(field(block, 124, 12).trim() || "0", 8));
    const prefix = field(block, 345, 155);
    const name = pax.path ?? (prefix !== "" ? `${prefix}/${field(block, 0, 100)}` : field(block, 0, 100));
    const offset = at + BLOCK;
    if (offset + size > total) throw new BackupRefused(`the backup is cut short (${name} needs ${size} bytes, the file ends before)`);
    pax = {};
    if (type === "x") {
      for (const record of (await readAt(handle, size, offset)).toString("utf8").split("\n")) {
        const m = /^\d+ ([^=]+)=(.*)$/s.exec(record);
        if (m) pax[m[1]!] = m[2]!;
      }
    } else if (type === "0" || type === "\0") {
      entries.push({ name, size, offset });
    } else if (type !== "5") {
      throw new BackupRefused(`the backup holds ${name}, an entry of tar type '${type}' that a media backup never writes`);
    }
    at = offset + size + padding(size).length;
  }
}

/** An entry's bytes, in chunks. */
export async function* entryBytes(handle: FileHandle, entry: TarEntry, chunk = 1024 * 1024): AsyncIterable<Buffer> {
  for (let at = 0; at < entry.size; at += chunk) yield await readAt(handle, Math.min(chunk, entry.size - at), entry.offset + at);
}

/**
 * The manifest, checked before any file is restored: the format and versions this build reads,
 * safe relative paths, and the archive's entries exactly those it lists.
 */
export function checkManifest(raw: string, entries: readonly TarEntry[], storeFormat: number): Manifest {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(raw) as Manifest;
  } catch {
    throw new BackupRefused(`${MANIFEST_NAME} is not JSON: this is not a media backup, or it is damaged`);
  }
  if (manifest.format !== "media-backup") throw new BackupRefused(`this is not a media backup (${MANIFEST_NAME} names no "media-backup" format)`);
  if (manifest.version !== BACKUP_FORMAT_VERSION)
    throw new BackupRefused(
      `backup format version ${String(manifest.version)} is not one this media reads (${BACKUP_FORMAT_VERSION}); restore it with the media version that wrote it (${String(manifest.media_version)})`,
    );
  if (manifest.store?.format !== storeFormat)
    throw new BackupRefused(
      `the backup's store format ${String(manifest.store?.format)} is not one this media reads (${storeFormat}); restore it with the media version that wrote it (${String(manifest.media_version)})`,
    );
  if (!Array.isArray(manifest.files)) throw new BackupRefused(`${MANIFEST_NAME} lists no files`);
  const inArchive = new Map(entries.filter((e) => e.name !== MANIFEST_NAME).map((e) => [e.name, e]));
  for (const file of manifest.files) {
    if (typeof file.path !== "string" || !safePath(file.path)) throw new BackupRefused(`${MANIFEST_NAME} names an unsafe path: ${JSON.stringify(file.path)}`);
    const entry = inArchive.get(DATA_PREFIX + file.path);
    if (!entry) throw new BackupRefused(`the backup lacks ${file.path}, which its manifest lists`);
    if (entry.size !== file.size) throw new BackupRefused(`${file.path} holds ${entry.size} bytes, its manifest says ${file.size}: the backup is damaged`);
    inArchive.delete(entry.name);
  }
  const extra = inArchive.keys().next();
  if (!extra.done) throw new BackupRefused(`the backup holds ${extra.value}, which its manifest does not list`);
  return manifest;
}

/** Relative, forward slashes, no "." or ".." step: it stays inside the folder it is restored into. */
export function safePath(p: string): boolean {
  return p !== "" && !p.startsWith("/") && !p.includes("\\") && !p.includes("\0") && p.split("/").every((step) => step !== "" && step !== "." && step !== "..");
}
