// The tests' OTLP trace receiver (infra/otlp-receiver, built once by its setup script): a real
// OTLP/HTTP endpoint whose spans a test reads back as JSON lines.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");

/** A span as the receiver flattens it (ids in hex; an empty parent for a root). */
export interface ReceivedSpan {
  readonly trace_id: string;
  readonly span_id: string;
  readonly parent_span_id: string;
  readonly name: string;
  readonly kind: string;
  readonly start_unix_nano: number;
  readonly end_unix_nano: number;
  readonly status: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly resource: Readonly<Record<string, unknown>>;
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  spans(): Promise<ReceivedSpan[]>;
  stop(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bin = execFileSync("bash", [path.join(ROOT, "infra/otlp-receiver/setup.sh")], { encoding: "utf8" }).trim();
  const child: ChildProcess = spawn(bin, ["-listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the OTLP receiver did not start: ${out}`)), 10_000);
    const seen = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on("data", seen);
    child.stderr!.on("data", seen);
    child.once("exit", (code) => reject(new Error(`the OTLP receiver exited (${code}): ${out}`)));
  });
  return {
    url,
    async spans() {
      const text = await (await fetch(`${url}/spans`)).text();
      return text
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as ReceivedSpan);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
