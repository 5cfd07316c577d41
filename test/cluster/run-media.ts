// One `node bin/media.js <command>` run to its exit, for the suites that read what a process says
// when it refuses to start (bad-config, secure-peers).
import { spawn } from "node:child_process";
import path from "node:path";
import { ROOT } from "../harness.js";

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** stdout and stderr, interleaved as they came. */
  readonly output: string;
  readonly ms: number;
}

/** Runs the command with exactly `env` until it exits; killed (SIGKILL) after timeoutMs. */
export function runMedia(command: string, env: NodeJS.ProcessEnv, timeoutMs = 45_000): Promise<Exit> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [path.join(ROOT, "bin/media.js"), command], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, ms: Date.now() - t0 });
    });
  });
}
