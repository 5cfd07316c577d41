// The data folder's lock: one media process at a time owns an embedded data folder, because a second
// one compacts store.log by renaming a new file over it, and the first then appends to the replaced file.
import { createHash, randomBytes } from "node:crypto";
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";

export const LOCK_FILE = "media.lock";

/** Who holds a data folder: enough to tell, on this host, whether that process still runs. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** The process's start (Linux: clock ticks after boot), so that a reused pid is not taken for the holder. */
  readonly started?: string;
  /** Makes each taking of the lock distinct, so a release or a takeover removes only the file it read. */
  readonly nonce: string;
}

export class DataFolderInUse extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder,
  ) {
    const where = holder.host === hostname() ? "" : ` on ${holder.host}`;
    super(`the data folder ${dir} is in use by another media process (pid ${holder.pid}${where}); stop it or set MEDIA_DATA_DIR to another folder`);
    this.name = "DataFolderInUse";
  }
}

export interface DataFolderLock {
  readonly file: string;
  /** Removes the lock file if it is still this one's; idempotent, and run at process exit anyway. */
  release(): void;
}

const code = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

/** Field 22 of /proc/<pid>/stat; undefined where there is no procfs. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Whether the holder may still run: a dead pid, or a live one that started at another time, is stale. */
export function holderAlive(holder: LockHolder): boolean {
  // A process of another machine (a shared volume) cannot be checked from here.
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (e) {
    // EPERM: it runs, under another user.
    if (code(e) === "ESRCH") return false;
  }
  const started = processStart(holder.pid);
  return holder.started === undefined || started === undefined || started === holder.started;
}

export function parseHolder(raw: string): LockHolder | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { pid, host, started, nonce } = value as Record<string, unknown>;
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0 || typeof host !== "string" || typeof nonce !== "string") return undefined;
  return { pid, host, nonce, ...(typeof started === "string" ? { started } : {}) };
}

function readLock(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    if (code(e) === "ENOENT") return undefined;
    throw e;
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch (e) {
    if (code(e) !== "ENOENT") throw e;
  }
}

/**
 * Creates the lock with its whole content or not at all: written to a file of its own, then linked
 * to the lock's name, which fails if the name exists. (An O_EXCL create followed by a write would
 * show a reader an empty file, which it could not tell from a dead writer's.)
 */
function create(file: string, raw: string, nonce: string): boolean {
  const tmp = `${file}.${process.pid}.${nonce}`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, raw);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if (code(e) === "EEXIST") return false;
    throw e;
  } finally {
    removeQuietly(tmp);
  }
}

/**
 * Removes a stale lock, atomically with the judgement that it is stale: a marker named after its
 * content, created exclusively, lets one process only remove that lock, and only if it is still there.
 */
function reap(file: string, raw: string): void {
  const marker = `${file}.reap-${createHash("sha256").update(raw).digest("hex").slice(0, 16)}`;
  let fd: number;
  try {
    fd = openSync(marker, "wx", 0o600);
  } catch (e) {
    if (code(e) !== "EEXIST") throw e;
    // Another process reaps it now; a marker that old was left by one that died while reaping.
    try {
      if (Date.now() - statSync(marker).mtimeMs > 10_000) removeQuietly(marker);
    } catch (e2) {
      if (code(e2) !== "ENOENT") throw e2;
    }
    return;
  }
  closeSync(fd);
  try {
    if (readLock(file) === raw) unlinkSync(file);
  } finally {
    removeQuietly(marker);
  }
}

const pause = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Takes the data folder for this process, or throws DataFolderInUse naming the holder. A refusal
 * writes nothing into the folder. The lock goes at release or when the process exits; one left by a
 * process that died (kill -9) is taken over.
 */
export function lockDataFolder(dir: string): DataFolderLock {
  const file = path.join(dir, LOCK_FILE);
  const started = processStart(process.pid);
  const me: LockHolder = { pid: process.pid, host: hostname(), nonce: randomBytes(8).toString("hex"), ...(started !== undefined ? { started } : {}) };
  const raw = JSON.stringify(me) + "\n";
  for (let attempt = 0; attempt < 20; attempt++) {
    const found = readLock(file);
    if (found === undefined) {
      if (create(file, raw, me.nonce)) return held(file, raw);
      continue;
    }
    const holder = parseHolder(found);
    // An unreadable lock was not written by a media process (they write theirs whole): stale.
    if (holder !== undefined && holderAlive(holder)) throw new DataFolderInUse(dir, holder);
    reap(file, found);
    if (attempt > 0) pause(20);
  }
  throw new Error(`the lock of the data folder ${dir} (${file}) keeps changing hands; try again`);
}

function held(file: string, raw: string): DataFolderLock {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    process.removeListener("exit", release);
    // Only this lock: were it taken over (wrongly judged stale), the new holder's file stays.
    if (readLock(file) === raw) removeQuietly(file);
  };
  // Runs on a normal exit and on process.exit (the CLI's SIGINT and SIGTERM handlers end with it).
  process.on("exit", release);
  return { file, release };
}
