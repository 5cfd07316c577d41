// The probes every role serves, GET /healthz (the process answers) and GET /readyz (it can do its
// work: its store and bus answer, an encoder node has its tools; not while starting or stopping).
// Load balancers and orchestrators call them every few seconds on every process, so a readiness
// answer is shared: one evaluation at a time, reused for a second after it settles, each check
// bounded by a timeout. The answer never depends on the request.
import type { Logger } from "./log.js";

export interface CheckResult {
  readonly ok: boolean;
  readonly message?: string;
}

/** One thing a process needs to do its work: "store", "bus", "encoder". */
export interface ReadinessCheck {
  readonly name: string;
  readonly check: () => CheckResult | Promise<CheckResult>;
}

export type ReadinessStatus = "starting" | "ready" | "not_ready" | "draining";

export interface ReadinessState {
  readonly status: ReadinessStatus;
  /** Every check's result, in the order given; empty while starting or draining (none runs then). */
  readonly checks: readonly { readonly name: string; readonly ok: boolean; readonly message?: string }[];
}

export interface ReadinessOptions {
  /** A check that has not answered after this long counts as failed. */
  readonly timeoutMs?: number;
  /** A settled evaluation answers every probe for this long. */
  readonly cacheMs?: number;
  readonly now?: () => number;
  readonly log?: Logger;
}

/** Below the 1 s that Kubernetes gives a probe by default would be too tight for a loaded Cassandra; docs/deploy.md asks for 3 s. */
export const CHECK_TIMEOUT_MS = 2_000;
export const CACHE_MS = 1_000;

export class Readiness {
  private checks: readonly ReadinessCheck[] | undefined;
  private draining = false;
  private pending: Promise<ReadinessState> | undefined;
  private last: { readonly at: number; readonly state: ReadinessState } | undefined;
  /** The status last logged, so a change is one log line, not one per probe. */
  private reported: ReadinessStatus = "starting";
  private readonly timeoutMs: number;
  private readonly cacheMs: number;
  private readonly now: () => number;

  constructor(private readonly options: ReadinessOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? CHECK_TIMEOUT_MS;
    this.cacheMs = options.cacheMs ?? CACHE_MS;
    this.now = options.now ?? Date.now;
  }

  /** The process has started its roles: from now on readiness is what these checks say. */
  serve(checks: readonly ReadinessCheck[]): void {
    this.checks = checks;
    this.last = undefined;
  }

  /** The process is stopping: not ready from now on, whatever the checks would say. */
  drain(): void {
    this.draining = true;
  }

  async state(): Promise<ReadinessState> {
    if (this.draining) return this.note({ status: "draining", checks: [] });
    const checks = this.checks;
    if (!checks) return { status: "starting", checks: [] };
    if (this.last && this.now() - this.last.at < this.cacheMs) return this.last.state;
    this.pending ??= this.evaluate(checks).finally(() => (this.pending = undefined));
    const state = await this.pending;
    // A drain that began while the checks ran wins over what they found.
    return this.draining ? this.note({ status: "draining", checks: [] }) : state;
  }

  private async evaluate(checks: readonly ReadinessCheck[]): Promise<ReadinessState> {
    const results = await Promise.all(
      checks.map(async ({ name, check }) => {
        const result = await bounded(check, this.timeoutMs);
        return result.ok ? { name, ok: true } : { name, ok: false, message: result.message ?? "not ready" };
      }),
    );
    const state: ReadinessState = { status: results.every((r) => r.ok) ? "ready" : "not_ready", checks: results };
    this.last = { at: this.now(), state };
    return this.note(state);
  }

  private note(state: ReadinessState): ReadinessState {
    if (state.status !== this.reported) {
      const failing = state.checks.filter((c) => !c.ok).map((c) => ({ check: c.name, message: c.message }));
      const log = this.options.log;
      if (state.status === "not_ready") log?.warn({ failing }, "not ready");
      else log?.info({ status: state.status }, state.status === "ready" ? "ready" : "not ready: draining");
      this.reported = state.status;
    }
    return state;
  }
}

async function bounded(check: ReadinessCheck["check"], timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, message: `no answer within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(check), late]);
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
  }
}

/** A probe's answer, host-independent: status, content type and body. */
export interface ProbeAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

export const PROBE_PATHS = ["/healthz", "/readyz"] as const;
export type ProbePath = (typeof PROBE_PATHS)[number];

export const isProbePath = (path: string): path is ProbePath => (PROBE_PATHS as readonly string[]).includes(path);

/**
 * /healthz: 200 whenever the event loop gets to answer. /readyz: 200 when ready, else 503 naming
 * the status and the checks that failed. `details` adds each failed check's message (the metrics
 * port, an operator's); the gateway's public port names the checks only, as the messages may
 * carry internal addresses.
 */
export async function probeAnswer(readiness: Readiness, path: ProbePath, details: boolean): Promise<ProbeAnswer> {
  if (path === "/healthz") return { status: 200, contentType: "application/json", body: `{"status":"alive"}\n` };
  const state = await readiness.state();
  const checks = state.checks.map((c) => (c.ok ? { name: c.name, ok: true } : { name: c.name, ok: false, ...(details ? { message: c.message } : {}) }));
  return { status: state.status === "ready" ? 200 : 503, contentType: "application/json", body: JSON.stringify({ status: state.status, checks }) + "\n" };
}
