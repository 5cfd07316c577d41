// CPU time of processes and of a JVM's JIT compiler and GC threads, from /proc: what the cluster
// and bus benches charge each process per request.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = (() => {
  try {
    return 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  } catch {
    return 10;
  }
})();
/** CPU time (user + system) a process has used, in ms; NaN where /proc is missing. */
export function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  if (pid === process.pid) {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return NaN;
  }
}
/** Threads of a JVM by kind: its JIT compilers, its garbage collector (JDK 17 thread names). */
const JVM_THREADS: readonly (readonly [string, RegExp])[] = [
  ["jit", /^C[12] CompilerThre/],
  ["gc", /^(GC Thread|G1 |VM Thread)/],
];
/**
 * CPU ms of a JVM's JIT compiler and GC threads (`<service>: jit`, `<service>: gc`), part of the
 * process's CPU: at least what they used, since the JVM stops idle compiler threads and their time
 * leaves with them.
 */
export function jvmThreadsMs(service: string, pid: number | undefined): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(JVM_THREADS.map(([kind]) => [`${service}: ${kind}`, 0]));
  if (pid === undefined) return out;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const kind = JVM_THREADS.find(([, re]) => re.test(comm))?.[0];
      if (!kind) continue;
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out[`${service}: ${kind}`]! += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}
