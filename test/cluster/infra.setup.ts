// Global setup of the cluster projects: real Kafka and Cassandra from infra/, started once for the
// run (unless already running) and stopped afterwards if this run started them.
import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
const running = (script: string) => spawnSync("bash", [path.join(ROOT, "infra", script), "status"], { stdio: "ignore" }).status === 0;

export default function setup(): () => void {
  const started: string[] = [];
  for (const script of ["kafka.sh", "cassandra.sh"]) {
    if (running(script)) continue;
    const t0 = Date.now();
    execFileSync("bash", [path.join(ROOT, "infra", script), "up"], { stdio: "inherit" });
    process.stderr.write(`[infra] ${script} up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    started.push(script);
  }
  return () => {
    if (process.env.MEDIA_TEST_KEEP_INFRA === "1") return;
    for (const script of started) execFileSync("bash", [path.join(ROOT, "infra", script), "down", "--clean"], { stdio: "inherit" });
  };
}
