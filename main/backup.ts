// `media backup` and `media restore`: the embedded data folder to one tar file and back, while the
// server runs. The store log is copied first, up to its committed length (readCommittedLog); every
// other file in the folder is written once under its name and never changed in place, so each is
// copied whole or, gone meanwhile, left out. A restore unpacks into a sibling folder, checks every
// byte against the manifest, and only then renames it into place.
import { constants, existsSync, type Dirent } from "node:fs";
import { access, mkdir, open, readdir, readFile, rename, rm, stat, writeFile, type FileHandle } from "node:fs/promises";
import { createHash } from "node:crypto";
import path from "node:path";
import type { Config } from "../src/config.js";
import { randomToken } from "../src/ids.js";
import { FILE_STORE_FORMAT, readCommittedLog, STORE_LOG } from "../src/store/file-store.js";
import {
  BACKUP_FORMAT_VERSION,
  BackupRefused,
  checkManifest,
  DATA_PREFIX,
  entryBytes,
  MANIFEST_NAME,
  tarEntries,
  TarWriter,
  type Manifest,
  type ManifestFile,
  type TarEntry,
} from "./backup-archive.js";
import { lockDataFolder, LOCK_FILE } from "./data-lock.js";

export { BackupRefused } from "./backup-archive.js";

/**
 * Written into a data folder while a restore in place swaps its entries, removed once done: serve
 * and backup refuse a folder that holds it, and the next restore finishes the job.
 */
export const RESTORE_MARKER = ".restore-in-progress";
const STAGING = ".restore-";
const REPLACED = ".replaced-";

/**
 * What a backup leaves out, relative to the data folder: the lock and its temporary files, the
 * store's compaction in progress, the encoder's scratch (a restart hands unfinished tasks out
 * again), a file still being written beside its name (`<name>.<8 characters>.part`, or an
 * upload part between its two renames), and what an interrupted restore in place left.
 */
export function leftOut(relative: string): boolean {
  const base = path.posix.basename(relative);
  return (
    relative === LOCK_FILE ||
    relative.startsWith(`${LOCK_FILE}.`) ||
    relative === `${STORE_LOG}.compact` ||
    (!relative.includes("/") && (relative.startsWith(STAGING) || relative.startsWith(REPLACED))) ||
    relative === "work" ||
    relative.startsWith("work/") ||
    /\.[A-Za-z0-9]{8}\.part$/.test(base) ||
    /^incoming-[A-Za-z0-9]{12}$/.test(base)
  );
}

const code = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

async function mediaVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(path.join(import.meta.dirname, "..", "package.json"), "utf8")) as { version?: string };
  return pkg.version ?? "unknown";
}

/** The folder's files (not the store log), relative with forward slashes, sorted; what leftOut names is skipped. */
async function filesOf(dir: string, under = ""): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(path.join(dir, under), { withFileTypes: true });
  } catch (e) {
    if (code(e) === "ENOENT" && under !== "") return []; // removed while the backup ran
    throw e;
  }
  const out: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const relative = under === "" ? entry.name : `${under}/${entry.name}`;
    if (leftOut(relative) || (under === "" && entry.name === STORE_LOG)) continue;
    if (entry.isDirectory()) out.push(...(await filesOf(dir, relative)));
    else if (entry.isFile()) out.push(relative);
  }
  return out;
}

export interface BackupResult {
  readonly file: string;
  readonly manifest: Manifest;
}

/** Where the backup goes: FILE, or a new timestamped file in FOLDER; never inside the data folder. */
async function backupTarget(config: Config, target: string): Promise<string> {
  let file = path.resolve(target);
  const found = await stat(file).catch((e: unknown) => (code(e) === "ENOENT" ? undefined : Promise.reject(e)));
  if (found?.isDirectory())
    file = path.join(
      file,
      `media-backup-${new Date()
        .toISOString()
        .replace(/[-:]/g, "")
        .replace(/\.\d+Z$/, "Z")}.tar`,
    );
  else if (found) throw new BackupRefused(`${target} exists; name a new file, or a folder to write a dated backup into`);
  const data = path.resolve(config.dataDir);
  if (file === data || file.startsWith(data + path.sep)) throw new BackupRefused(`write the backup outside the data folder (${data}): it would copy itself`);
  await stat(path.dirname(file)).catch(() => Promise.reject(new BackupRefused(`the folder ${path.dirname(file)} does not exist`)));
  return file;
}

/**
 * Writes a backup of the embedded data folder to `target`, owner-only (it holds the server secret
 * and what is sealed with it). Safe beside a running server: it takes no lock and writes nothing
 * into the folder.
 */
export async function backup(config: Config, target: string): Promise<BackupResult> {
  if (config.mode !== "embedded")
    throw new BackupRefused(
      "backup copies the embedded data folder; a cluster keeps its state in Cassandra and its bucket: back those up with their own tools",
    );
  const dir = config.dataDir;
  refuseInterruptedRestore(dir);
  let log: Buffer;
  try {
    // First: every commit acknowledged before this line is in it (see readCommittedLog).
    log = readCommittedLog(dir);
  } catch (e) {
    if (code(e) === "ENOENT") throw new BackupRefused(`no embedded data folder at ${dir} (no ${STORE_LOG}): set MEDIA_DATA_DIR to the folder serve uses`);
    throw e;
  }
  const file = await backupTarget(config, target);
  const partial = `${file}.${randomToken(8)}.partial`;
  const out = await open(partial, "wx", 0o600);
  const files: ManifestFile[] = [];
  try {
    const tar = new TarWriter(out);
    const now = Date.now();
    const add = async (relative: string, size: number, mode: number, mtime: number, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>) => {
      files.push({ path: relative, size, mode: mode & 0o777, sha256: await tar.file(DATA_PREFIX + relative, size, mode, mtime, body) });
    };
    await add(STORE_LOG, log.length, 0o600, now, [log]);
    for (const relative of await filesOf(dir)) {
      // Opened first: a file renamed over or removed after this still reads whole from the handle.
      let handle: FileHandle;
      try {
        handle = await open(path.join(dir, relative), "r");
      } catch (e) {
        if (code(e) === "ENOENT") continue;
        throw e;
      }
      try {
        const info = await handle.stat();
        await add(relative, info.size, info.mode, info.mtimeMs, handle.createReadStream({ autoClose: false, highWaterMark: 1024 * 1024 }));
      } finally {
        await handle.close();
      }
    }
    const manifest: Manifest = {
      format: "media-backup",
      version: BACKUP_FORMAT_VERSION,
      created_at: new Date(now).toISOString(),
      media_version: await mediaVersion(),
      store: { format: FILE_STORE_FORMAT, log_bytes: log.length },
      files,
    };
    const json = Buffer.from(JSON.stringify(manifest, null, 2) + "\n");
    await tar.file(MANIFEST_NAME, json.length, 0o600, now, [json]);
    await tar.end();
    await out.sync();
    await out.close();
    await rename(partial, file);
    await syncFolder(path.dirname(file));
    return { file, manifest };
  } catch (e) {
    await out.close().catch(() => undefined);
    await rm(partial, { force: true });
    throw e;
  }
}

async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface RestoreOptions {
  /** Replace a data folder that holds files (never one a live server holds). */
  readonly force?: boolean;
  /** Stage inside the folder even where a sibling would do (chosen by itself otherwise; tests force it). */
  readonly inPlace?: boolean;
}

/** Serve's check, after it takes the lock: a folder a restore was swapping is half old, half new. */
export function refuseInterruptedRestore(dir: string): void {
  if (existsSync(path.join(dir, RESTORE_MARKER)))
    throw new BackupRefused(`a restore into the data folder ${dir} did not finish; run media restore again (with --force) before serving it`);
}

/**
 * Restores a backup into the data folder (MEDIA_DATA_DIR). Refuses a folder a media process holds,
 * a folder with files in it unless forced, a format this build does not read, and any byte that
 * does not match the manifest. Nothing is half-restored: the files are unpacked and checked in a
 * sibling folder, then it is renamed into place (a replaced folder is removed after). Where the
 * folder cannot be renamed (a volume's mount point, a parent this user cannot write), they are
 * unpacked and checked inside it, and its entries swapped under RESTORE_MARKER.
 */
export async function restore(config: Config, source: string, options: RestoreOptions = {}): Promise<Manifest> {
  if (config.mode !== "embedded") throw new BackupRefused("restore writes the embedded data folder; set MEDIA_MODE=embedded (the default)");
  const target = path.resolve(config.dataDir);
  const archive = await open(source, "r").catch((e: unknown) =>
    Promise.reject(code(e) === "ENOENT" ? new BackupRefused(`backup file not found: ${source}`) : e),
  );
  try {
    if ((await archive.stat()).isDirectory()) throw new BackupRefused(`${source} is a folder; give the backup's .tar file`);
    const entries = await tarEntries(archive);
    const manifestEntry = entries.find((e) => e.name === MANIFEST_NAME);
    if (!manifestEntry) throw new BackupRefused(`${source} has no ${MANIFEST_NAME}: this is not a media backup`);
    let raw = "";
    for await (const chunk of entryBytes(archive, manifestEntry)) raw += chunk.toString("utf8");
    const manifest = checkManifest(raw, entries, FILE_STORE_FORMAT);

    const found = await stat(target).catch((e: unknown) => (code(e) === "ENOENT" ? undefined : Promise.reject(e)));
    if (found && !found.isDirectory()) throw new BackupRefused(`${target} is not a folder`);
    // Held while the folder is replaced, so that no server starts on it meanwhile; throws, naming
    // the holder, when a server runs on it.
    const lock = found ? lockDataFolder(target) : undefined;
    try {
      const present = found ? (await readdir(target)).filter((name) => !restoreOwn(name)) : [];
      if (present.length > 0 && !options.force)
        throw new BackupRefused(
          `the data folder ${target} is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", ..." : ""}); restore with --force to replace it`,
        );
      if (found && (options.inPlace || !(await renameable(target, found.dev)))) {
        await restoreInPlace(archive, entries, manifest, target);
      } else {
        await mkdir(path.dirname(target), { recursive: true });
        const staging = `${target}${STAGING}${randomToken(8)}`;
        await mkdir(staging, { mode: 0o700 });
        try {
          await unpack(archive, entries, manifest, staging);
          await swapIn(staging, target, found !== undefined);
        } catch (e) {
          await rm(staging, { recursive: true, force: true });
          throw e;
        }
      }
    } finally {
      lock?.release();
    }
    return manifest;
  } finally {
    await archive.close();
  }
}

/** The lock, the marker and a restore's own staging and replaced folders (an interrupted one's too). */
const restoreOwn = (name: string): boolean => name === LOCK_FILE || name === RESTORE_MARKER || name.startsWith(STAGING) || name.startsWith(REPLACED);

/** Whether the folder can be renamed within its parent: not a mount point, and the parent writable. */
async function renameable(target: string, dev: number): Promise<boolean> {
  const parent = path.dirname(target);
  if ((await stat(parent)).dev !== dev) return false;
  return access(parent, constants.W_OK).then(
    () => true,
    () => false,
  );
}

/**
 * Unpacks and checks inside the folder, then swaps its entries under the marker: a crash before the
 * marker leaves the folder as it was, one after it a folder that serve refuses until a restore
 * runs again.
 */
async function restoreInPlace(archive: FileHandle, entries: readonly TarEntry[], manifest: Manifest, target: string): Promise<void> {
  const staging = path.join(target, `${STAGING}${randomToken(8)}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    await unpack(archive, entries, manifest, staging);
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    throw e;
  }
  const marker = path.join(target, RESTORE_MARKER);
  await writeFile(marker, `${new Date().toISOString()}\n`, { mode: 0o600 });
  await syncFolder(target);
  const replaced = path.join(target, `${REPLACED}${randomToken(8)}`);
  await mkdir(replaced, { mode: 0o700 });
  for (const name of await readdir(target)) if (!restoreOwn(name)) await rename(path.join(target, name), path.join(replaced, name));
  for (const name of await readdir(staging)) await rename(path.join(staging, name), path.join(target, name));
  await syncFolder(target);
  await rm(marker);
  await syncFolder(target);
  for (const name of await readdir(target))
    if (name.startsWith(STAGING) || name.startsWith(REPLACED)) await rm(path.join(target, name), { recursive: true, force: true });
}

/** Writes every listed file under `into`, owner-only, each checked against its SHA-256 and synced. */
async function unpack(archive: FileHandle, entries: readonly TarEntry[], manifest: Manifest, into: string): Promise<void> {
  const byName = new Map(entries.map((e) => [e.name, e]));
  for (const file of manifest.files) {
    const entry = byName.get(DATA_PREFIX + file.path)!;
    const target = path.join(into, ...file.path.split("/"));
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const out = await open(target, "wx", (file.mode & 0o700) | 0o600);
    const hash = createHash("sha256");
    try {
      let at = 0;
      for await (const chunk of entryBytes(archive, entry)) {
        hash.update(chunk);
        await out.write(chunk, 0, chunk.length, at);
        at += chunk.length;
      }
      await out.sync();
    } finally {
      await out.close();
    }
    if (hash.digest("hex") !== file.sha256) throw new BackupRefused(`checksum mismatch for ${file.path}: the backup is damaged; nothing was restored`);
  }
  await syncFolder(into);
}

/** The checked folder takes the target's name; a replaced one is renamed aside first and removed after. */
async function swapIn(staging: string, target: string, exists: boolean): Promise<void> {
  if (!exists) {
    await rename(staging, target);
  } else {
    const aside = `${target}.replaced-${randomToken(8)}`;
    await rename(target, aside);
    try {
      await rename(staging, target);
    } catch (e) {
      await rename(aside, target);
      throw e;
    }
    await rm(aside, { recursive: true, force: true });
  }
  await syncFolder(path.dirname(target));
}

/** One line for the operator: what was written and that it holds secrets. */
export function describeBackup(result: BackupResult): string {
  const bytes = result.manifest.files.reduce((sum, f) => sum + f.size, 0);
  return `backup written: ${result.file} (${result.manifest.files.length} files, ${mib(bytes)}); it holds the server secret: keep it as private as the data folder`;
}

export function describeRestore(config: Config, source: string, manifest: Manifest): string {
  const bytes = manifest.files.reduce((sum, f) => sum + f.size, 0);
  return `restored ${source} (taken ${manifest.created_at} by media ${manifest.media_version}; ${manifest.files.length} files, ${mib(bytes)}) into ${path.resolve(config.dataDir)}`;
}

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

/** Notes for the backup's caller: what the backup does not hold. */
export function backupNotes(config: Config): string[] {
  const notes: string[] = [];
  if (config.serverSecret)
    notes.push("the server secret comes from MEDIA_SERVER_SECRET, not the data folder: keep it with the backup, which cannot be read without it");
  const data = path.resolve(config.dataDir);
  if (config.managed.kind === "local" && !path.resolve(config.managed.dir).startsWith(data + path.sep))
    notes.push(`managed storage (MEDIA_MANAGED_DIR=${config.managed.dir}) is outside the data folder and not in the backup: copy it after the backup`);
  if (config.managed.kind === "s3") notes.push("managed storage is a bucket (MEDIA_MANAGED_S3_BUCKET) and not in the backup");
  return notes;
}
