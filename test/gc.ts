// A full garbage collection in a process, through the inspector protocol, for the tests that bound
// memory: a process's resident memory also holds what V8 has not collected yet, which depends on
// when its last full collection ran, so a bound on it alone is noise (the heap grows by tens of
// MiB of garbage before V8 collects). This process: its own inspector session. A child: SIGUSR1
// opens its inspector (the test clusters start with --inspect-port=0, so on a free port, printed
// on its output), then one HeapProfiler.collectGarbage over the protocol's WebSocket.
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
  try {
    await new Promise<void>((resolve, reject) => {
      ws.onerror = () => reject(new Error(`inspector of process ${pid} at ${url}: connection failed`));
      ws.onopen = () => ws.send(JSON.stringify({ id: 1, method: "HeapProfiler.collectGarbage" }));
      ws.onmessage = (event) => {
        const reply = JSON.parse(String(event.data)) as { id?: number; error?: { message: string } };
        if (reply.id !== 1) return;
        if (reply.error) reject(new Error(`collectGarbage in process ${pid}: ${reply.error.message}`));
        else resolve();
      };
    });
  } finally {
    ws.close();
  }
}
