// The open loop of bench:cluster's "evenly paced" measurement, on a thread of its own: one request
// every 1000/rate ms whatever the answers, each latency counted from its planned send time. On the
// bench's main thread the CPU sampler, the interference watcher and garbage collection of the
// other measurements stalled the sender by up to 23 ms, and a late send counts as latency; here
// the thread does nothing else, and reports its own largest stall with the samples.
import http from "node:http";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { parentPort, workerData } from "node:worker_threads";

const { bases, route, body, headers, rate, seconds, sockets, slowMs } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function post(base) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}/media.v1.${route}`,
      { method: "POST", agent, headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// Open the sockets first, so no measured request waits for a connection.
await Promise.all(Array.from({ length: sockets }, (_, i) => post(bases[i % bases.length]).catch(() => 0)));

const interval = 1000 / rate;
const n = Math.round(rate * seconds);
const samples = [];
/** Requests at least slowMs slow, with their planned send time (ms since the epoch): to line up with other logs. */
const slow = [];
let failures = 0;
const inflight = [];
const stalls = monitorEventLoopDelay({ resolution: 2 });
stalls.enable();
const t0 = performance.now();
for (let i = 0; i < n; i++) {
  const due = t0 + i * interval;
  // Timers may fire a little early against performance.now(): sleep again until due.
  for (let wait = due - performance.now(); wait > 0; wait = due - performance.now()) await sleep(wait);
  inflight.push(
    post(bases[i % bases.length]).then(
      (status) => {
        if (status === 200) {
          const ms = performance.now() - due;
          samples.push(ms);
          if (ms >= slowMs) slow.push({ at: performance.timeOrigin + due, ms });
        } else failures++;
      },
      () => void failures++,
    ),
  );
}
await Promise.all(inflight);
const elapsedMs = performance.now() - t0;
stalls.disable();
agent.destroy();
parentPort.postMessage({ samples, failures, elapsedMs, stallMaxMs: stalls.max / 1e6, slow });
