// Readiness probes run from the test machine, the same checks infra/kafka.sh and infra/cassandra.sh
// make: a real Kafka admin round trip (metadata + list topics), and a CQL v4 OPTIONS frame that
// gets a SUPPORTED frame back. Used by the containers provider (test/cluster/containers.ts).
import net from "node:net";
import kafkajs from "kafkajs";

/** A Kafka admin client connects to `brokers` and lists the topics within `timeoutMs`. */
export async function kafkaAnswers(brokers: readonly string[], timeoutMs = 5_000): Promise<boolean> {
  const admin = new kafkajs.Kafka({
    brokers: [...brokers],
    clientId: "media-test-probe",
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    logLevel: kafkajs.logLevel.NOTHING,
  }).admin();
  try {
    await admin.connect();
    await admin.listTopics();
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** A CQL v4 OPTIONS frame sent to host:port gets a SUPPORTED frame back within `timeoutMs`. */
export function cqlAnswers(host: string, port: number, timeoutMs = 3_000): Promise<boolean> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on("error", () => done(false));
    socket.on("close", () => done(false));
    socket.on("connect", () => socket.write(Buffer.from([0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00])));
    socket.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      // header: version (0x84 = response, v4), flags, stream (2), opcode (0x06 = SUPPORTED), length (4)
      if (got.length >= 9) done(got[0] === 0x84 && got[4] === 0x06);
    });
  });
}

/** Calls `probe` every `intervalMs` until it answers true; false once `timeoutMs` has passed. */
export async function until(probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 500): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
