// The data folder's lock: taken, refused while a live process holds it, taken over from a dead one,
// released by its holder and at the holder's exit.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DataFolderInUse, LOCK_FILE, lockDataFolder, parseHolder, processStart, type LockHolder } from "./data-lock.js";

const folder = () => mkdtempSync(path.join(tmpdir(), "data-lock-"));
const lockOf = (dir: string) => parseHolder(readFileSync(path.join(dir, LOCK_FILE), "utf8"));
const writeLock = (dir: string, holder: Omit<LockHolder, "nonce">) =>
  writeFileSync(path.join(dir, LOCK_FILE), JSON.stringify({ ...holder, nonce: "0123456789abcdef" }) + "\n");

/** A pid that no process has any more: a child that has exited. */
const deadPid = (): number => spawnSync(process.execPath, ["-e", ""]).pid;

describe("data folder lock", () => {
  it("takes a free folder and releases it", () => {
    const dir = folder();
    const lock = lockDataFolder(dir);
    expect(lockOf(dir)).toMatchObject({ pid: process.pid, host: hostname() });
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
    lock.release();
    expect(existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    lock.release(); // idempotent
    lockDataFolder(dir).release();
  });

  it("refuses while a live process holds it, naming the folder and the pid, and writes nothing", () => {
    const dir = folder();
    // The parent of this worker runs on this host for the whole test.
    const holder = { pid: process.ppid, host: hostname(), ...(processStart(process.ppid) !== undefined ? { started: processStart(process.ppid)! } : {}) };
    writeLock(dir, holder);
    const before = readFileSync(path.join(dir, LOCK_FILE), "utf8");
    expect(() => lockDataFolder(dir)).toThrow(DataFolderInUse);
    expect(() => lockDataFolder(dir)).toThrow(
      `the data folder ${dir} is in use by another media process (pid ${process.ppid}); stop it or set MEDIA_DATA_DIR to another folder`,
    );
    expect(readFileSync(path.join(dir, LOCK_FILE), "utf8")).toBe(before);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it("refuses a second taking by the same process", () => {
    const dir = folder();
    const lock = lockDataFolder(dir);
    expect(() => lockDataFolder(dir)).toThrow(`(pid ${process.pid})`);
    lock.release();
  });

  it("refuses when the holder runs on another host, which it cannot check", () => {
    const dir = folder();
    writeLock(dir, { pid: deadPid(), host: `${hostname()}-elsewhere` });
    expect(() => lockDataFolder(dir)).toThrow(` on ${hostname()}-elsewhere); stop it`);
  });

  it("takes over the lock of a dead process", () => {
    const dir = folder();
    writeLock(dir, { pid: deadPid(), host: hostname() });
    const lock = lockDataFolder(dir);
    expect(lockOf(dir)?.pid).toBe(process.pid);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
    lock.release();
  });

  it.skipIf(processStart(process.pid) === undefined)("takes over a lock whose pid now belongs to a process started later", () => {
    const dir = folder();
    writeLock(dir, { pid: process.ppid, host: hostname(), started: "1" });
    const lock = lockDataFolder(dir);
    expect(lockOf(dir)?.pid).toBe(process.pid);
    lock.release();
  });

  it("takes over a lock file no media process wrote", () => {
    const dir = folder();
    writeFileSync(path.join(dir, LOCK_FILE), "");
    lockDataFolder(dir).release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it("leaves a lock that is no longer its own at release", () => {
    const dir = folder();
    const lock = lockDataFolder(dir);
    writeLock(dir, { pid: process.ppid, host: hostname() });
    lock.release();
    expect(lockOf(dir)?.pid).toBe(process.ppid);
  });

  it("goes when its process exits, and stays (to be taken over) when it is killed", async () => {
    const dir = folder();
    const module = path.join(path.dirname(fileURLToPath(import.meta.url)), "data-lock.ts");
    // Asynchronously: a worker blocked on a child for seconds misses vitest's RPC deadlines.
    const child = (end: string) =>
      new Promise<{ pid: number | undefined; code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve, reject) => {
        const c = spawn(
          process.execPath,
          [
            "--import",
            "tsx",
            "--input-type=module",
            "-e",
            `const { lockDataFolder } = await import(${JSON.stringify(module)}); lockDataFolder(${JSON.stringify(dir)}); ${end}`,
          ],
          { stdio: ["ignore", "ignore", "pipe"] },
        );
        let stderr = "";
        c.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        c.once("error", reject);
        c.once("exit", (code, signal) => resolve({ pid: c.pid, code, signal, stderr }));
      });
    const exited = await child("process.exitCode = 0;");
    expect(exited.code, exited.stderr).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
    const killed = await child("process.kill(process.pid, 'SIGKILL');");
    expect(killed.signal).toBe("SIGKILL");
    expect(lockOf(dir)?.pid).toBe(killed.pid);
    lockDataFolder(dir).release();
  }, 60_000);
});
