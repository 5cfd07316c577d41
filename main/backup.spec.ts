// Backup and restore of the embedded data folder: what the archive holds (and leaves out), that a
// restored folder opens as the same store, and each refusal leaving the target as it was.
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../src/config.js";
import { FILE_STORE_FORMAT, FileStore } from "../src/store/file-store.js";
import { BACKUP_FORMAT_VERSION, BackupRefused, checkManifest, DATA_PREFIX, MANIFEST_NAME, tarEntries, TarWriter, type Manifest } from "./backup-archive.js";
import { backup, leftOut, refuseInterruptedRestore, restore, RESTORE_MARKER } from "./backup.js";
import { DataFolderInUse, lockDataFolder } from "./data-lock.js";

const work = () => mkdtempSync(path.join(tmpdir(), "backup-"));
const configFor = (dataDir: string): Config => loadConfig({ MEDIA_DATA_DIR: dataDir });

/** A data folder as serve leaves it: a store with records, the secrets, stored media, and what a backup skips. */
async function dataFolder(root: string): Promise<string> {
  const dir = path.join(root, "data");
  const store = new FileStore(dir);
  await store.open();
  await store.commit({ writes: [{ table: "t", id: "a", value: { n: 1 } }], events: [{ key: "k", seq: 1, data: { x: 1 }, createdAt: 1 }] });
  await store.commit({ writes: [{ table: "t", id: "a", value: { n: 2 } }] });
  await store.close();
  writeFileSync(path.join(dir, "server-secret"), "s3cret", { mode: 0o600 });
  writeFileSync(path.join(dir, "bootstrap.json"), '{"api_key":"ak_x"}\n', { mode: 0o600 });
  const deep = path.join(dir, "managed", "apps", "app_0123456789", "videos", "vid_0123456789abcdef", "play", "1080p_h264_high");
  mkdirSync(deep, { recursive: true });
  writeFileSync(path.join(deep, "segment_000001_with_a_long_name.m4s"), Buffer.alloc(70_000, 7)); // a path over ustar's 100 bytes
  writeFileSync(path.join(deep, "segment_000002.m4s.AbCd1234.part"), "being written");
  mkdirSync(path.join(dir, "work", "node-1"), { recursive: true });
  writeFileSync(path.join(dir, "work", "node-1", "scratch.mp4"), "scratch");
  // A line still being written when the backup reads the log: never acknowledged.
  appendFileSync(path.join(dir, "store.log"), '{"w":[{"table":"t","id":"torn"');
  return dir;
}

const listing = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();

/** An archive written by hand: the given manifest (changed as a test needs) over one file. */
async function archiveWith(file: string, edit: (m: Manifest) => unknown, extra: { name: string; body: string }[] = []): Promise<void> {
  const out = await open(file, "w", 0o600);
  const tar = new TarWriter(out);
  const body = Buffer.from("s3cret");
  const sha256 = await tar.file(`${DATA_PREFIX}server-secret`, body.length, 0o600, Date.now(), [body]);
  for (const e of extra) await tar.file(e.name, Buffer.byteLength(e.body), 0o600, Date.now(), [Buffer.from(e.body)]);
  const manifest: Manifest = {
    format: "media-backup",
    version: BACKUP_FORMAT_VERSION,
    created_at: new Date().toISOString(),
    media_version: "0.1.0",
    store: { format: FILE_STORE_FORMAT, log_bytes: 0 },
    files: [{ path: "server-secret", size: body.length, sha256, mode: 0o600 }],
  };
  const json = Buffer.from(JSON.stringify(edit(manifest)));
  await tar.file(MANIFEST_NAME, json.length, 0o600, Date.now(), [json]);
  await tar.end();
  await out.close();
}

describe("media backup", () => {
  it("writes an owner-only tar of the folder's committed state, which tar reads and restore brings back", async () => {
    const root = work();
    const dir = await dataFolder(root);
    // A running server holds the lock: the backup neither needs it nor copies it.
    const lock = lockDataFolder(dir);
    const { file, manifest } = await backup(configFor(dir), root);
    lock.release();
    expect(path.dirname(file)).toBe(root);
    expect(path.basename(file)).toMatch(/^media-backup-\d{8}T\d{6}Z\.tar$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const committed = readFileSync(path.join(dir, "store.log"), "utf8").replace(/[^\n]*$/, "");
    expect(manifest.store).toEqual({ format: FILE_STORE_FORMAT, log_bytes: Buffer.byteLength(committed) });
    expect(manifest.files.map((f) => f.path).sort()).toEqual([
      "bootstrap.json",
      "managed/apps/app_0123456789/videos/vid_0123456789abcdef/play/1080p_h264_high/segment_000001_with_a_long_name.m4s",
      "server-secret",
      "store.log",
    ]);
    // GNU tar reads it, long names included.
    const names = execFileSync("tar", ["-tf", file], { encoding: "utf8" }).trim().split("\n");
    expect(names).toContain(`${DATA_PREFIX}${manifest.files.find((f) => f.path.startsWith("managed/"))!.path}`);
    expect(names.at(-1)).toBe(MANIFEST_NAME);

    const restored = path.join(work(), "data");
    await restore(configFor(restored), file);
    expect(listing(restored)).toEqual(manifest.files.map((f) => f.path).sort());
    expect(readFileSync(path.join(restored, "store.log"), "utf8")).toBe(committed);
    expect(readFileSync(path.join(restored, "server-secret"), "utf8")).toBe("s3cret");
    for (const f of manifest.files) expect(statSync(path.join(restored, f.path)).mode & 0o077).toBe(0);
    expect(statSync(restored).mode & 0o777).toBe(0o700);
    const store = new FileStore(restored);
    await store.open();
    expect(await store.get("t", "a")).toMatchObject({ value: { n: 2 }, version: 2 });
    expect(await store.get("t", "torn")).toBeUndefined();
    expect((await store.events("k", 0)).length).toBe(1);
    await store.close();
    // Nothing is left beside the restored folder.
    expect(readdirSync(path.dirname(restored))).toEqual(["data"]);
  });

  it("leaves out the lock, the compaction in progress, encoder scratch and files being written", () => {
    for (const p of [
      "media.lock",
      "media.lock.123.abcd",
      "store.log.compact",
      "work",
      "work/n/x.mp4",
      "managed/a/b.m4s.AbCd1234.part",
      "managed/u/incoming-AbCdEfGh1234",
    ])
      expect(leftOut(p), p).toBe(true);
    for (const p of [
      "store.log",
      "server-secret",
      "bootstrap.json",
      "dev-issuer.jwk.json",
      "managed/a/b.m4s",
      "managed/u/00001.0123456789abcdef0123456789abcdef",
      "network/x",
    ])
      expect(leftOut(p), p).toBe(false);
  });

  it("refuses a folder with no store, an existing file, a file inside the data folder, and cluster mode", async () => {
    const root = work();
    const dir = await dataFolder(root);
    await expect(backup(configFor(path.join(root, "nothing")), path.join(root, "b.tar"))).rejects.toThrow(
      /no embedded data folder at .*nothing \(no store\.log\)/,
    );
    writeFileSync(path.join(root, "taken.tar"), "");
    await expect(backup(configFor(dir), path.join(root, "taken.tar"))).rejects.toThrow(/taken\.tar exists; name a new file/);
    await expect(backup(configFor(dir), path.join(dir, "b.tar"))).rejects.toThrow(/outside the data folder/);
    await expect(backup(configFor(dir), path.join(root, "missing", "b.tar"))).rejects.toThrow(/the folder .*missing does not exist/);
    await expect(backup({ ...configFor(dir), mode: "cluster" }, path.join(root, "b.tar"))).rejects.toThrow(/Cassandra and its bucket/);
    expect(readdirSync(root).sort()).toEqual(["data", "taken.tar"]);
  });
});

describe("media restore refuses, and leaves the target as it was", () => {
  it("a folder a live media process holds, even with --force", async () => {
    const root = work();
    const { file } = await backup(configFor(await dataFolder(root)), path.join(root, "b.tar"));
    const target = path.join(root, "running");
    mkdirSync(target);
    writeFileSync(path.join(target, "store.log"), "");
    const lock = lockDataFolder(target);
    try {
      await expect(restore(configFor(target), file, { force: true })).rejects.toBeInstanceOf(DataFolderInUse);
    } finally {
      lock.release();
    }
    expect(readdirSync(target)).toEqual(["store.log"]);
    expect(readdirSync(root).sort()).toEqual(["b.tar", "data", "running"]);
  });

  it("a folder with files unless --force, which replaces it whole", async () => {
    const root = work();
    const { file } = await backup(configFor(await dataFolder(root)), path.join(root, "b.tar"));
    const target = path.join(root, "old");
    mkdirSync(target);
    writeFileSync(path.join(target, "stale-file"), "x");
    await expect(restore(configFor(target), file)).rejects.toThrow(/the data folder .*old is not empty \(stale-file\); restore with --force to replace it/);
    expect(readdirSync(target)).toEqual(["stale-file"]);
    await restore(configFor(target), file, { force: true });
    expect(readdirSync(target).sort()).toEqual(["bootstrap.json", "managed", "server-secret", "store.log"]);
    expect(readdirSync(root).sort()).toEqual(["b.tar", "data", "old"]);
    // An empty folder (a fresh volume) needs no --force.
    const empty = path.join(root, "empty");
    mkdirSync(empty);
    await restore(configFor(empty), file);
    expect(existsSync(path.join(empty, "store.log"))).toBe(true);
  });

  it("a format version or store format this build does not read", async () => {
    const root = work();
    const target = path.join(root, "target");
    await archiveWith(path.join(root, "v2.tar"), (m) => ({ ...m, version: 2, media_version: "9.0.0" }));
    await expect(restore(configFor(target), path.join(root, "v2.tar"))).rejects.toThrow(
      "backup format version 2 is not one this media reads (1); restore it with the media version that wrote it (9.0.0)",
    );
    await archiveWith(path.join(root, "store.tar"), (m) => ({ ...m, store: { format: FILE_STORE_FORMAT + 1, log_bytes: 0 } }));
    await expect(restore(configFor(target), path.join(root, "store.tar"))).rejects.toThrow(/store format 2 is not one this media reads \(1\)/);
    await archiveWith(path.join(root, "other.tar"), (m) => ({ ...m, format: "something-else" }));
    await expect(restore(configFor(target), path.join(root, "other.tar"))).rejects.toThrow(/this is not a media backup/);
    expect(existsSync(target)).toBe(false);
  });

  it("a checksum mismatch, and nothing is left of the attempt", async () => {
    const root = work();
    const { file } = await backup(configFor(await dataFolder(root)), path.join(root, "b.tar"));
    const handle = await open(file, "r+");
    const secret = (await tarEntries(handle)).find((e) => e.name === `${DATA_PREFIX}server-secret`)!;
    await handle.write(Buffer.from("X"), 0, 1, secret.offset);
    await handle.close();
    const target = path.join(root, "target");
    await expect(restore(configFor(target), file)).rejects.toThrow("checksum mismatch for server-secret: the backup is damaged; nothing was restored");
    expect(readdirSync(root).sort()).toEqual(["b.tar", "data"]);
    // The same over a folder being replaced: it stays as it was.
    mkdirSync(target);
    writeFileSync(path.join(target, "kept"), "x");
    await expect(restore(configFor(target), file, { force: true })).rejects.toThrow(/checksum mismatch/);
    expect(readdirSync(target)).toEqual(["kept"]);
    expect(readdirSync(root).sort()).toEqual(["b.tar", "data", "target"]);
  });

  it("an archive whose entries and manifest disagree, or whose paths leave the folder", async () => {
    const root = work();
    const target = path.join(root, "target");
    await archiveWith(path.join(root, "extra.tar"), (m) => m, [{ name: `${DATA_PREFIX}unlisted`, body: "x" }]);
    await expect(restore(configFor(target), path.join(root, "extra.tar"))).rejects.toThrow("the backup holds data/unlisted, which its manifest does not list");
    await archiveWith(path.join(root, "escape.tar"), (m) => ({ ...m, files: [{ ...m.files[0]!, path: "../escape" }] }));
    await expect(restore(configFor(target), path.join(root, "escape.tar"))).rejects.toThrow('manifest.json names an unsafe path: "../escape"');
    await archiveWith(path.join(root, "lacking.tar"), (m) => ({ ...m, files: [...m.files, { path: "store.log", size: 1, sha256: "", mode: 0o600 }] }));
    await expect(restore(configFor(target), path.join(root, "lacking.tar"))).rejects.toThrow("the backup lacks store.log, which its manifest lists");
    writeFileSync(path.join(root, "short.tar"), readFileSync(path.join(root, "extra.tar")).subarray(0, 700));
    await expect(restore(configFor(target), path.join(root, "short.tar"))).rejects.toThrow(/the backup is cut short/);
    await expect(restore(configFor(target), path.join(root, "absent.tar"))).rejects.toThrow(/backup file not found: .*absent\.tar/);
    expect(existsSync(target)).toBe(false);
  });

  it("checks the manifest's file sizes against the archive's entries", () => {
    const entries = [{ name: `${DATA_PREFIX}server-secret`, size: 6, offset: 512 }];
    const manifest = {
      format: "media-backup",
      version: 1,
      media_version: "x",
      store: { format: FILE_STORE_FORMAT },
      files: [{ path: "server-secret", size: 7, sha256: "", mode: 0o600 }],
    };
    expect(() => checkManifest(JSON.stringify(manifest), entries, FILE_STORE_FORMAT)).toThrow(
      "server-secret holds 6 bytes, its manifest says 7: the backup is damaged",
    );
    expect(() => checkManifest("{", entries, FILE_STORE_FORMAT)).toThrow(BackupRefused);
  });
});

describe("media restore in place (the data folder is a volume's mount point)", () => {
  it("unpacks and checks inside the folder, swaps its entries, and leaves nothing of the attempt", async () => {
    const root = work();
    const { file, manifest } = await backup(configFor(await dataFolder(root)), path.join(root, "b.tar"));
    const target = path.join(root, "volume");
    mkdirSync(path.join(target, "managed", "old"), { recursive: true });
    writeFileSync(path.join(target, "managed", "old", "gone.m4s"), "x");
    writeFileSync(path.join(target, "server-secret"), "old");
    const mountPoint = statSync(target).ino;
    await restore(configFor(target), file, { force: true, inPlace: true });
    expect(statSync(target).ino).toBe(mountPoint); // the folder itself was never renamed
    expect(listing(target)).toEqual(manifest.files.map((f) => f.path).sort());
    expect(readFileSync(path.join(target, "server-secret"), "utf8")).toBe("s3cret");
    expect(readdirSync(root).sort()).toEqual(["b.tar", "data", "volume"]);
  });

  it("a checksum mismatch leaves the folder as it was", async () => {
    const root = work();
    const { file } = await backup(configFor(await dataFolder(root)), path.join(root, "b.tar"));
    const handle = await open(file, "r+");
    const log = (await tarEntries(handle)).find((e) => e.name === `${DATA_PREFIX}store.log`)!;
    await handle.write(Buffer.from("#"), 0, 1, log.offset + 3);
    await handle.close();
    const target = path.join(root, "volume");
    mkdirSync(target);
    writeFileSync(path.join(target, "store.log"), "old\n");
    await expect(restore(configFor(target), file, { force: true, inPlace: true })).rejects.toThrow("checksum mismatch for store.log");
    expect(readdirSync(target)).toEqual(["store.log"]);
    expect(readFileSync(path.join(target, "store.log"), "utf8")).toBe("old\n");
  });

  it("after one that stopped mid-swap, serve and backup refuse the folder until a restore runs again", async () => {
    const root = work();
    const { file, manifest } = await backup(configFor(await dataFolder(root)), path.join(root, "b.tar"));
    // What a crash mid-swap leaves: the marker, half the old entries moved aside, half the new ones in.
    const target = path.join(root, "volume");
    mkdirSync(path.join(target, ".replaced-AbCd1234"), { recursive: true });
    mkdirSync(path.join(target, ".restore-EfGh5678"), { recursive: true });
    writeFileSync(path.join(target, ".replaced-AbCd1234", "store.log"), "old\n");
    writeFileSync(path.join(target, ".restore-EfGh5678", "bootstrap.json"), "{}");
    writeFileSync(path.join(target, "server-secret"), "new");
    writeFileSync(path.join(target, RESTORE_MARKER), "");
    const refusal = `a restore into the data folder ${target} did not finish; run media restore again (with --force) before serving it`;
    expect(() => refuseInterruptedRestore(target)).toThrow(refusal);
    await expect(backup(configFor(target), path.join(root, "c.tar"))).rejects.toThrow(refusal);
    await restore(configFor(target), file, { force: true, inPlace: true });
    expect(() => refuseInterruptedRestore(target)).not.toThrow();
    expect(listing(target)).toEqual(manifest.files.map((f) => f.path).sort());
  });
});
