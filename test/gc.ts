// A full garbage collection in a process, through the inspector protocol, for the tests that bound
// memory: a process's resident memory also holds what V8 has not collected yet, which depends on
// when its last full collection ran, so a bound on it alone is noise (the heap grows by tens of
// MiB of garbage before V8 collects). This process: its own inspector session. A child: SIGUSR1
// opens its inspector (the test clusters start with --inspect-port=0, so on a free port, printed
// on its output), then one HeapProfiler.collectGarbage over the protocol's WebSocket. The same
// session serves bench:cluster's CPU profiles (BENCH_PROFILE).
import { Session } from "node:inspector";
import { WebSocket } from "undici";

export async function collectGarbageHere(): Promise<void> {
  const session = new Session();
  session.connect();
  try {
    await new Promise<void>((resolve, reject) => session.post("HeapProfiler.collectGarbage", (e) => (e ? reject(e) : resolve())));
  } finally {
    session.disconnect();
  }
}

const LISTENING = /Debugger listening on (ws:\/\/\S+)/;

/** A full collection in a child whose output `output` gives (started with --inspect-port=0). */
export async function collectGarbageIn(pid: number, output: () => string): Promise<void> {
  const session = await inspect(pid, output);
  try {
    await session.call("HeapProfiler.collectGarbage");
  } finally {
    session.close();
  }
}

/** An inspector session with a child (its inspector opened by SIGUSR1 unless open): protocol calls, one at a time or side by side. */
export interface InspectorSession {
  call(method: string, params?: object): Promise<unknown>;
  close(): void;
}

export async function inspect(pid: number, output: () => string): Promise<InspectorSession> {
  let url = LISTENING.exec(output())?.[1];
  if (!url) {
    process.kill(pid, "SIGUSR1");
    const deadline = Date.now() + 10_000;
    while (!(url = LISTENING.exec(output())?.[1])) {
      if (Date.now() > deadline) throw new Error(`process ${pid} opened no inspector: ${output().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const ws = new WebSocket(url);
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; method: string }>();
  let next = 1;
  await new Promise<void>((resolve, reject) => {
    ws.onerror = () => reject(new Error(`inspector of process ${pid} at ${url}: connection failed`));
    ws.onopen = () => resolve();
  });
  // A session that ends fails the calls still waiting on it (the process exited, the socket broke).
  ws.onclose = ws.onerror = () => {
    for (const w of waiting.values()) w.reject(new Error(`${w.method} in process ${pid}: the inspector session ended`));
    waiting.clear();
  };
  ws.onmessage = (event) => {
    const reply = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const w = reply.id !== undefined ? waiting.get(reply.id) : undefined;
    if (!w) return;
    waiting.delete(reply.id!);
    if (reply.error) w.reject(new Error(`${w.method} in process ${pid}: ${reply.error.message}`));
    else w.resolve(reply.result);
  };
  return {
    call: (method, params) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject, method });
        ws.send(JSON.stringify({ id, method, ...(params ? { params } : {}) }));
      }),
    close: () => ws.close(),
  };
}
