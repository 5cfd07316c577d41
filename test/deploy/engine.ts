// The container engine and the project's images for the deploy suites: deploy/engine.sh starts an
// engine where none answers (and says why it cannot), deploy/images/build.sh builds what changed.
// Where no engine can run, the suites skip with that one line instead of failing.
import { execFile, spawnSync } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

export const ROOT = path.resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

/** Why no engine can run here, or undefined when one answers (started if needed). */
export function engineMissing(): string | undefined {
  const up = spawnSync("bash", [path.join(ROOT, "deploy/engine.sh"), "up"], { encoding: "utf8" });
  if (up.status === 0) return undefined;
  const why = `${up.stderr}${up.stdout}`.trim().split("\n").at(-1) || `deploy/engine.sh up exited ${up.status}`;
  process.stderr.write(`[deploy] skipped: no container engine here (${why})\n`);
  return why;
}

/** Builds the images whose inputs changed (a few seconds when none did). */
export async function buildImages(which: "all" | "app" | "peers" = "all"): Promise<void> {
  const t0 = Date.now();
  const { stderr } = await run("bash", [path.join(ROOT, "deploy/images/build.sh"), which], { maxBuffer: 16 << 20 });
  if (stderr.trim()) process.stderr.write(`${stderr.trimEnd().replace(/^/gm, "[deploy] ")}\n`);
  process.stderr.write(`[deploy] images (${which}) ready in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}

/** Debian's client (the newer one some machines put first on PATH may lack the classic builder). */
export const DOCKER = spawnSync("test", ["-x", "/usr/bin/docker"]).status === 0 ? "/usr/bin/docker" : "docker";

export async function docker(...args: string[]): Promise<string> {
  return (await run(DOCKER, args, { maxBuffer: 16 << 20 })).stdout;
}

/** One compose project: `docker-compose -p <project> -f <file>` with its variables. */
export function composeProject(file: string, project: string, env: Record<string, string>) {
  const compose = async (...args: string[]) =>
    (await run("docker-compose", ["-p", project, "-f", path.join(ROOT, file), ...args], { env: { ...process.env, ...env }, maxBuffer: 32 << 20 })).stdout;
  return {
    compose,
    /** The container id of a service's (first) container. */
    async container(service: string): Promise<string> {
      const id = (await compose("ps", "-q", service)).trim().split("\n")[0];
      if (!id) throw new Error(`no container for ${service} in ${project}`);
      return id;
    },
    /** Stops and removes everything, volumes included (best effort: the test's own cleanup). */
    async down(): Promise<void> {
      await compose("down", "-v", "--remove-orphans", "-t", "5").catch(() => undefined);
    },
    async logs(service?: string): Promise<string> {
      return compose("logs", "--no-color", "--tail", "60", ...(service ? [service] : [])).catch((e: unknown) => String(e));
    },
  };
}

/** Whether GET url answers `status` (false while nothing listens there yet). */
export async function answers(url: string, status = 200): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
    await res.arrayBuffer();
    return res.status === status;
  } catch {
    return false;
  }
}
