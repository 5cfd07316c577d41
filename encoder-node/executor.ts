// The executor of a plan: ffmpeg, one process per command in its own process group (killed whole on
// abort), progress parsed from -progress, CPU time from -benchmark; then the packager for a
// protected plan. It reports facts (CPU, wall time) and writes no manifest: manifests/ does.
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import type { ContentKey } from "../src/drm/types.js";
import { MediaError, type MediaErrorCode } from "./media-errors.js";
import { checkPackagingKeys, removeAes128KeyInfo, runPackager, writeAes128KeyInfo } from "./packager.js";
import type { OutputPlan } from "./plan.js";
import { observeEncodeSpeed } from "../src/metrics-flow.js";
import { stage } from "./stage-timing.js";

/** Facts the executor reports: what ffmpeg said while it ran, and what a run cost. */
export interface RunProgress {
  readonly fraction: number;
  readonly outTimeMs: number;
  readonly speed?: number;
}

export interface RunResult {
  /** User plus system CPU seconds of the ffmpeg process(es), from ffmpeg's -benchmark report. */
  readonly cpuSeconds?: number;
  readonly wallMs: number;
}

export interface RunOptions {
  durationMs: number;
  signal?: AbortSignal;
  onProgress?: (p: RunProgress) => void;
  cwd?: string;
  /** Run below the node's other work (nice(1)): a progressive plan's later rungs. */
  nice?: number;
}

const STDERR_LINES = 200;

/** Process groups of running ffmpegs, killed if this process exits first (they are detached). */
const running = new Set<number>();
let exitHook = false;
function track(pid: number): void {
  running.add(pid);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const p of running) killGroup(p);
  });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/**
 * Calls onProgress on every whole-percent change and at least once a second, never going back.
 * Returns update (from ffmpeg's reports) and stop (clears the timer).
 */
function throttle(emit: (fraction: number) => void) {
  let last = -1;
  let lastPercent = -1;
  let lastAt = 0;
  let current = 0;
  const send = () => {
    last = current;
    lastPercent = Math.floor(current * 100);
    lastAt = Date.now();
    emit(current);
  };
  // Checked every 100 ms against 900 ms: the longest gap between two reports is 1 s, not 1.25.
  const timer = setInterval(() => {
    if (Date.now() - lastAt >= 900) send();
  }, 100);
  timer.unref();
  return {
    update(fraction: number) {
      current = Math.max(current, Math.min(1, Math.max(0, fraction)));
      if (Math.floor(current * 100) !== lastPercent || (current !== last && Date.now() - lastAt >= 1000)) send();
    },
    stop() {
      clearInterval(timer);
    },
  };
}

/** The cause ffmpeg printed: its error lines (-loglevel level+ tags them), else its last lines. */
function failureReason(lines: string[]): string {
  const level = /\[(error|fatal|panic)\]:?\s*/;
  const errors = lines.filter((l) => level.test(l)).map((l) => l.replace(level, ""));
  const chosen = (errors.length > 0 ? errors : lines.map((l) => l.replace(/^\[\w+\]\s*/, ""))).filter((l) => l.trim() !== "").slice(-5);
  return chosen.join("\n");
}

function failureCode(reason: string): MediaErrorCode {
  if (/No space left on device|Disk quota exceeded/i.test(reason)) return "output_write_failed";
  if (/Permission denied|Read-only file system/i.test(reason)) return "output_write_denied";
  return "encode_failed";
}

/**
 * Runs one ffmpeg. Rejects with MediaError("canceled") on abort (the process group is gone by
 * then) and MediaError("encode_failed", last stderr lines) on a non-zero exit.
 */
export function runFfmpeg(args: readonly string[], opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(new MediaError("canceled", "encode canceled"));
    const started = Date.now();
    // Own process group, so an abort kills ffmpeg and anything it started in one call.
    const [command, argv] = opts.nice ? ["nice", ["-n", String(opts.nice), "ffmpeg", ...args]] : ["ffmpeg", args];
    const child = spawn(command, argv, {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      // SVT-AV1 logs its banner straight to stderr; warnings and errors are enough.
      env: { ...process.env, SVT_LOG: "2" },
    });
    let outTimeMs = 0;
    let speed: number | undefined;
    let cpuSeconds: number | undefined;
    let canceled = false;
    let settled = false;
    const stderr: string[] = [];
    const progress = throttle((fraction) => opts.onProgress?.({ fraction, outTimeMs, ...(speed !== undefined ? { speed } : {}) }));

    const onAbort = () => {
      canceled = true;
      if (child.pid !== undefined) killGroup(child.pid);
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (child.pid !== undefined) track(child.pid);

    const finish = (err?: MediaError) => {
      if (settled) return;
      settled = true;
      progress.stop();
      opts.signal?.removeEventListener("abort", onAbort);
      if (child.pid !== undefined) running.delete(child.pid);
      if (err) return reject(err);
      progress.update(1);
      resolve({ ...(cpuSeconds !== undefined ? { cpuSeconds } : {}), wallMs: Date.now() - started });
    };

    // -progress writes key=value lines; a report ends with progress=continue (or end).
    lines(child.stdout, (line) => {
      const eq = line.indexOf("=");
      const key = line.slice(0, eq);
      const value = line.slice(eq + 1).trim();
      if (key === "out_time_us" && Number(value) >= 0) outTimeMs = Number(value) / 1000;
      else if (key === "speed") speed = Number.isFinite(Number.parseFloat(value)) ? Number.parseFloat(value) : undefined;
      else if (key === "progress" && opts.durationMs > 0) progress.update(outTimeMs / opts.durationMs);
    });
    lines(child.stderr, (line) => {
      const bench = /bench: utime=([\d.]+)s stime=([\d.]+)s/.exec(line);
      if (bench) cpuSeconds = Math.round((Number(bench[1]) + Number(bench[2])) * 1000) / 1000;
      stderr.push(line);
      if (stderr.length > STDERR_LINES) stderr.shift();
    });

    child.once("error", (e: NodeJS.ErrnoException) => {
      finish(new MediaError("internal", e.code === "ENOENT" ? "ffmpeg is not installed on this encoder node" : `ffmpeg could not start: ${e.message}`));
    });
    // On abort, exit is enough: the group is dead and nothing more is worth reading.
    child.once("exit", () => {
      if (canceled) finish(new MediaError("canceled", "encode canceled"));
    });
    child.once("close", (code, sig) => {
      if (canceled) return finish(new MediaError("canceled", "encode canceled"));
      if (code === 0) return finish();
      const reason = failureReason(stderr) || (sig ? `ffmpeg was killed by ${sig}` : `ffmpeg exited with code ${code}`);
      finish(new MediaError(failureCode(reason), reason));
    });
  });
}

/** Calls fn with each complete line of a stream (and the unterminated last one at its end). */
function lines(stream: NodeJS.ReadableStream, fn: (line: string) => void): void {
  let pending = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    pending += chunk;
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    parts.forEach(fn);
  });
  stream.on("end", () => {
    if (pending !== "") fn(pending);
  });
}

/** Share of a protected output's progress that packaging stands for: about 0.2 s per 10 s rendition, next to encoding's minutes. */
const PACKAGING_SHARE = 0.03;

/**
 * Runs a plan's commands (all at once when parallel, else in order) and packages a protected plan
 * with `keys`. Progress is the weighted mean of the
 * commands' progress; a failed command stops the others and its error is the one reported.
 */
export async function encodePlan(
  plan: OutputPlan,
  opts: {
    signal?: AbortSignal;
    onProgress?: (fraction: number) => void;
    keys?: readonly ContentKey[];
    /**
     * Called again and again while the commands run (never twice at once), and once after they all
     * succeeded: a progressive plan's publisher. It may answer how long to wait before the next call
     * (WHILE_RUNNING_MS by default).
     */
    whileRunning?: () => Promise<number | void>;
    /**
     * Run once the commands and the packager are done, before the plan counts as done (its
     * progress 1) and while an aes_128 key info file is still there: ffmpeg.ts's runPlan writes the
     * manifests here. The executor knows nothing of them.
     */
    finish?: (signal: AbortSignal) => Promise<void>;
  },
): Promise<RunResult> {
  if (opts.signal?.aborted) throw new MediaError("canceled", "encode canceled");
  const started = Date.now();
  await mkdir(plan.dir, { recursive: true });
  const n = plan.commands.length;
  const weights = plan.weights && plan.weights.length === n ? plan.weights : plan.commands.map(() => 1);
  const total = weights.reduce((a, b) => a + b, 0) || 1;
  const fractions = plan.commands.map(() => 0);
  const reporter = throttle((f) => opts.onProgress?.(f));
  const encodeShare = plan.packaging ? 1 - PACKAGING_SHARE : 1;
  // Manifests are the last step: commands together stop just short of 1.
  const report = () => reporter.update(Math.min(0.999, (encodeShare * fractions.reduce((sum, f, i) => sum + f * weights[i]!, 0)) / total));
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  let cpu = 0;
  let cpuKnown = true;
  const run = async (i: number) => {
    const r = await runFfmpeg(plan.commands[i]!, {
      durationMs: plan.durationMs,
      signal: stop.signal,
      ...(plan.nice?.[i] ? { nice: plan.nice[i] } : {}),
      onProgress: (p) => ((fractions[i] = p.fraction), report()),
    });
    fractions[i] = 1;
    report();
    if (r.cpuSeconds === undefined) cpuKnown = false;
    else cpu += r.cpuSeconds;
  };
  // ffmpeg's HLS muxer takes one key info file for every stream: aes_128 encrypts with the first key given.
  const aes128Key = opts.keys?.[0];
  try {
    if (plan.aes128) {
      if (!aes128Key) throw new MediaError("internal", "the output is encrypted with aes_128, but no content key was given");
      await writeAes128KeyInfo(plan.aes128.keyInfoFile, aes128Key);
    }
    if (plan.packaging) {
      checkPackagingKeys(plan.packaging, opts.keys ?? []);
      await mkdir(plan.packaging.clearDir, { recursive: true });
    }
    // The hook runs beside the commands; its failure stops them, as a command's would.
    let hookFailure: unknown;
    let commandsDone = false;
    const hook = opts.whileRunning;
    const hookLoop = hook
      ? (async () => {
          let wait = WHILE_RUNNING_MS;
          while (!commandsDone && !stop.signal.aborted) {
            await new Promise((r) => setTimeout(r, wait));
            if (commandsDone || stop.signal.aborted) break;
            wait = (await hook()) ?? WHILE_RUNNING_MS;
          }
        })().catch((e: unknown) => {
          hookFailure = e;
          stop.abort();
        })
      : Promise.resolve();
    let commandFailure: unknown;
    try {
      const encodeStarted = performance.now();
      await stage("encode", runCommands);
      // The plan's media over the wall time of its commands, all rungs together.
      observeEncodeSpeed(plan.renditions ?? [], plan.durationMs / 1000, (performance.now() - encodeStarted) / 1000);
    } catch (e) {
      commandFailure = e;
    } finally {
      commandsDone = true;
      await hookLoop;
    }
    // A failed hook stopped the commands: its failure is the cause.
    if (hookFailure !== undefined) throw hookFailure;
    if (commandFailure !== undefined) throw commandFailure;
    if (hook) await hook();
    if (plan.packaging) {
      const packaging = plan.packaging;
      await stage("packager", () => runPackager(packaging, opts.keys ?? [], { signal: stop.signal }));
      reporter.update(0.999);
    }
    await opts.finish?.(stop.signal);
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    reporter.stop();
    if (plan.aes128) await removeAes128KeyInfo(plan.aes128.keyInfoFile);
  }
  if (opts.signal?.aborted) throw new MediaError("canceled", "encode canceled");
  opts.onProgress?.(1);
  return { ...(cpuKnown ? { cpuSeconds: Math.round(cpu * 1000) / 1000 } : {}), wallMs: Date.now() - started };

  async function runCommands(): Promise<void> {
    if (plan.parallel) {
      let first: unknown;
      await Promise.all(
        plan.commands.map((_, i) =>
          run(i).catch((e: unknown) => {
            // The first failure is the cause; the others were stopped because of it.
            if (first === undefined) first = e;
            stop.abort();
          }),
        ),
      );
      if (first !== undefined) throw opts.signal?.aborted ? new MediaError("canceled", "encode canceled") : first;
    } else {
      for (let i = 0; i < n; i++) await run(i);
    }
  }
}

/** How often a progressive plan's publisher looks for new segments: a 4 s segment of a low rung takes about half a second here. */
const WHILE_RUNNING_MS = 150;
