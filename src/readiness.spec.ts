import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.js";
import { probeAnswer, Readiness, type CheckResult } from "./readiness.js";

/** A check whose answer the test sets, counting its calls. */
function fakeCheck(name: string, answer: () => CheckResult | Promise<CheckResult> = () => ({ ok: true })) {
  const c = { name, calls: 0, answer, check: () => (c.calls++, c.answer()) };
  return c;
}

describe("readiness", () => {
  it("is not ready while the roles start, then ready when every check passes", async () => {
    const readiness = new Readiness();
    expect(await readiness.state()).toEqual({ status: "starting", checks: [] });
    readiness.serve([fakeCheck("store"), fakeCheck("bus")]);
    expect(await readiness.state()).toEqual({
      status: "ready",
      checks: [
        { name: "store", ok: true },
        { name: "bus", ok: true },
      ],
    });
  });

  it("names the check that fails, the one that throws and the one that does not answer in time", async () => {
    const readiness = new Readiness({ timeoutMs: 30 });
    readiness.serve([
      fakeCheck("store", () => ({ ok: false, message: "cassandra: All host(s) tried for query failed" })),
      fakeCheck("bus", () => Promise.reject(new Error("broker gone"))),
      fakeCheck("encoder", () => new Promise<CheckResult>(() => undefined)),
      fakeCheck("other"),
    ]);
    const t0 = Date.now();
    const state = await readiness.state();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(state).toEqual({
      status: "not_ready",
      checks: [
        { name: "store", ok: false, message: "cassandra: All host(s) tried for query failed" },
        { name: "bus", ok: false, message: "broker gone" },
        { name: "encoder", ok: false, message: "no answer within 30 ms" },
        { name: "other", ok: true },
      ],
    });
  });

  it("runs one evaluation at a time and reuses it for cacheMs after it settles", async () => {
    let now = 1_000;
    let release: () => void = () => undefined;
    const store = fakeCheck("store", () => new Promise<CheckResult>((resolve) => (release = () => resolve({ ok: true }))));
    const readiness = new Readiness({ cacheMs: 1_000, now: () => now });
    readiness.serve([store]);
    // Many probes at once: one check.
    const answers = Promise.all(Array.from({ length: 50 }, () => readiness.state()));
    await new Promise((r) => setTimeout(r, 0)); // the check has been called
    release();
    expect((await answers).every((s) => s.status === "ready")).toBe(true);
    expect(store.calls).toBe(1);
    // Within the second after it settled: the same answer, no check, even when the truth changed.
    store.answer = () => ({ ok: false, message: "down" });
    now += 999;
    expect((await readiness.state()).status).toBe("ready");
    expect(store.calls).toBe(1);
    now += 1;
    expect((await readiness.state()).status).toBe("not_ready");
    expect(store.calls).toBe(2);
  });

  it("is draining, and runs no check, from the moment drain is called, even over an evaluation under way", async () => {
    let release: () => void = () => undefined;
    const store = fakeCheck("store", () => new Promise<CheckResult>((resolve) => (release = () => resolve({ ok: true }))));
    const readiness = new Readiness({ cacheMs: 0 });
    readiness.serve([store]);
    const under = readiness.state();
    await new Promise((r) => setTimeout(r, 0)); // the check has been called
    readiness.drain();
    release();
    expect(await under).toEqual({ status: "draining", checks: [] });
    const calls = store.calls;
    expect(await readiness.state()).toEqual({ status: "draining", checks: [] });
    expect(store.calls).toBe(calls);
  });

  it("logs a change of status once, not once a probe", async () => {
    const lines: [string, unknown][] = [];
    const log = { warn: (o: unknown, m: string) => lines.push([m, o]), info: (o: unknown, m: string) => lines.push([m, o]) };
    const store = fakeCheck("store", () => ({ ok: false, message: "down" }));
    const readiness = new Readiness({ cacheMs: 0, log: log as never });
    readiness.serve([store]);
    for (let i = 0; i < 3; i++) await readiness.state();
    store.answer = () => ({ ok: true });
    for (let i = 0; i < 3; i++) await readiness.state();
    readiness.drain();
    for (let i = 0; i < 3; i++) await readiness.state();
    expect(lines).toEqual([
      ["not ready", { failing: [{ check: "store", message: "down" }] }],
      ["ready", { status: "ready" }],
      ["not ready: draining", { status: "draining" }],
    ]);
  });
});

describe("probe answers", () => {
  it("answers /healthz 200 whatever readiness says, draining included", async () => {
    const readiness = new Readiness();
    readiness.drain();
    expect(await probeAnswer(readiness, "/healthz", false)).toEqual({ status: 200, contentType: "application/json", body: `{"status":"alive"}\n` });
  });

  it("answers /readyz 200 when ready, 503 otherwise; the public answer names the failed check without its message", async () => {
    const readiness = new Readiness({ cacheMs: 0 });
    const store = fakeCheck("store");
    readiness.serve([store, fakeCheck("bus")]);
    const ready = await probeAnswer(readiness, "/readyz", false);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({
      status: "ready",
      checks: [
        { name: "store", ok: true },
        { name: "bus", ok: true },
      ],
    });
    store.answer = () => ({ ok: false, message: "cassandra: 10.0.0.5:9042 refused" });
    const publicAnswer = await probeAnswer(readiness, "/readyz", false);
    expect(publicAnswer.status).toBe(503);
    expect(JSON.parse(publicAnswer.body)).toEqual({
      status: "not_ready",
      checks: [
        { name: "store", ok: false },
        { name: "bus", ok: true },
      ],
    });
    const operator = await probeAnswer(readiness, "/readyz", true);
    expect(JSON.parse(operator.body).checks[0]).toEqual({ name: "store", ok: false, message: "cassandra: 10.0.0.5:9042 refused" });
    readiness.drain();
    const draining = await probeAnswer(readiness, "/readyz", true);
    expect([draining.status, JSON.parse(draining.body)]).toEqual([503, { status: "draining", checks: [] }]);
  });
});

describe("MEDIA_DRAIN_DELAY_SECONDS", () => {
  const base = { MEDIA_DATA_DIR: "/tmp/media-readiness-spec" };
  it("is 5 s in cluster mode and 0 in embedded mode unless set", () => {
    expect(loadConfig({ ...base, MEDIA_MODE: "cluster" }).drainDelayMs).toBe(5_000);
    expect(loadConfig(base).drainDelayMs).toBe(0);
    expect(loadConfig({ ...base, MEDIA_MODE: "cluster", MEDIA_DRAIN_DELAY_SECONDS: "0" }).drainDelayMs).toBe(0);
    expect(loadConfig({ ...base, MEDIA_DRAIN_DELAY_SECONDS: "12" }).drainDelayMs).toBe(12_000);
  });

  it("refuses what is not a whole number of seconds up to 300, naming the setting", () => {
    for (const bad of ["-1", "2.5", "five", "301"]) {
      let error: unknown;
      try {
        loadConfig({ ...base, MEDIA_DRAIN_DELAY_SECONDS: bad });
      } catch (e) {
        error = e;
      }
      expect(error, bad).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).setting).toBe("MEDIA_DRAIN_DELAY_SECONDS");
    }
  });
});
