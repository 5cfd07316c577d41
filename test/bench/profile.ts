// CPU profiles of a cluster's Node processes through a measurement (bench:cluster, BENCH_PROFILE):
// each process's inspector (opened by SIGUSR1; the cluster starts with --inspect-port=0) runs V8's
// sampling profiler while the load runs; the profile is written as <dir>/<name>.cpuprofile (open it
// in Chrome's DevTools) and summed by where the code comes from: a package, a folder of ours, Node's
// own, or V8's garbage collector.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { inspect, type InspectorSession } from "../gc.js";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

export interface CpuProfile {
  readonly nodes: readonly { readonly id: number; readonly callFrame: CallFrame; readonly hitCount?: number }[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

/** Where a frame's code comes from: node_modules/<package>, node:<module>, a folder of ours, or V8's own ("(garbage collector)"). */
export function originOf(frame: CallFrame, root: string): string {
  const url = frame.url;
  if (url === "") return frame.functionName || "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith("node:")) return "node";
  const file = url.replace(/^file:\/\//, "");
  const rel = path.relative(root, file);
  if (rel.startsWith("..")) return file;
  const dir = path.dirname(rel);
  return dir === "." ? rel : dir;
}

/** Self time of the profile in µs, by origin (originOf), most first. */
export function selfTimeByOrigin(profile: CpuProfile, root: string): [string, number][] {
  const origin = new Map(profile.nodes.map((n) => [n.id, originOf(n.callFrame, root)]));
  const out = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the interval up to the next one (the last one's: the mean interval).
  const mean = samples.length > 0 ? (profile.endTime - profile.startTime) / samples.length : 0;
  for (let i = 0; i < samples.length; i++) {
    const o = origin.get(samples[i]!) ?? "?";
    out.set(o, (out.get(o) ?? 0) + (i + 1 < deltas.length ? deltas[i + 1]! : mean));
  }
  return [...out].sort((a, b) => b[1] - a[1]);
}

export interface Profiling {
  /** Stops every profiler, writes the profiles, and returns each process's self time by origin (µs). */
  stop(): Promise<{ name: string; byOrigin: [string, number][] }[]>;
}

/** Starts the sampling profiler in each process (`name` names its file); a process that cannot be profiled fails the start. */
export async function profile(
  dir: string,
  root: string,
  processes: readonly { name: string; pid: number; output: () => string }[],
  samplingUs = 200,
): Promise<Profiling> {
  const sessions: { name: string; session: InspectorSession }[] = [];
  for (const p of processes) {
    const session = await inspect(p.pid, p.output);
    await session.call("Profiler.enable");
    await session.call("Profiler.setSamplingInterval", { interval: samplingUs });
    await session.call("Profiler.start");
    sessions.push({ name: p.name, session });
  }
  return {
    async stop() {
      const out: { name: string; byOrigin: [string, number][] }[] = [];
      for (const { name, session } of sessions) {
        try {
          const { profile: p } = (await session.call("Profiler.stop")) as { profile: CpuProfile };
          await session.call("Profiler.disable");
          writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(p));
          out.push({ name, byOrigin: selfTimeByOrigin(p, root) });
        } finally {
          session.close();
        }
      }
      return out;
    },
  };
}
