// Watch at scale: many streams of one entity, on raw sockets whose reading the tests control. Every
// stream gets its snapshot and the terminal message, versions only increase, nothing repeats; a
// stream that stops reading gets the latest state when it resumes, one that never reads is ended
// with resource_exhausted, and 1,000 non-reading streams keep the gateway's memory within a bound.
// Runs against both deployments (in the cluster, streams on both gateways).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { spawn } from "node:child_process";
import { gunzipSync } from "node:zlib";
import { WatchVideoRequestSchema, WatchVideoResponseSchema } from "../../src/gen/media/v1/video_pb.js";
import path from "node:path";
import { call, ok, ROOT, startHarness, TARGET, until, type Auth, type Harness } from "../harness.js";
import { enveloped, RawStream, type RawFrame } from "../raw-stream.js";

/** The stall limit of these tests' gateways (MEDIA_WATCH_STALL_SECONDS; 60 by default). */
const STALL_SECONDS = 5;
const MiB = 1024 * 1024;

let h: Harness;
let key: Auth;
let headers: Record<string, string>;

beforeAll(async () => {
  h = await startHarness({ MEDIA_WATCH_STALL_SECONDS: String(STALL_SECONDS), MEDIA_RATE_LIMIT_KEY: "off" });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  headers = {
    "content-type": "application/connect+json",
    "connect-protocol-version": "1",
    authorization: `Bearer ${h.boot.api_key}`,
    "x-organization-id": h.boot.organization_id,
  };
});

afterAll(async () => {
  await h?.server.close();
});

const authOf = (on: Harness): Auth => ({ bearer: on.boot.api_key, org: on.boot.organization_id });

async function newVideo(on = h): Promise<string> {
  const created = await ok(
    call(on.base, "VideoService/CreateUpload", { app_id: on.boot.app_id, filename: "w.mp4", content_type: "video/mp4", size_bytes: 10 }, authOf(on)),
  );
  return created.video.id as string;
}

/**
 * Update n of a video: its step is in the description, padded, with a long title and 20 long
 * tags, so each message is about 4 KiB: the sockets push back after half as many updates as
 * with the description alone (in the cluster, an update is a round trip through Kafka).
 */
const PADDING = "x".repeat(1900);
const TITLE = "t".repeat(250);
const TAGS = Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(100, "g"));
const update = (base: string, id: string, step: number, auth = key) =>
  ok(call(base, "VideoService/Update", { id, title: TITLE, tags: TAGS, description: `${step}:${PADDING}` }, auth));
const stepOf = (message: any): number => Number(String(message.video.description ?? "").split(":")[0] || 0);

const watch = (base: string, id: string) => new RawStream(base, "/media.v1.VideoService/Watch", headers, enveloped({ id }));

const messages = (frames: RawFrame[]) => frames.filter((f) => f.flags === 0).map((f) => JSON.parse(f.data.toString("utf8")));
const endOf = (frames: RawFrame[]) => {
  const last = frames.at(-1);
  return last && last.flags & 0x02 ? (JSON.parse(last.data.toString("utf8")) as { error?: { code: string; message: string } }) : undefined;
};
const hasSnapshot = (r: { frames: RawFrame[] }) => r.frames.some((f) => f.flags === 0);

/** A gateway's metric (no labels), read from its /metrics. */
async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

/** How Watch streams ended so far (by code) and whether the non-reading clients still run: the message of a check that streams are still open. */
async function whyEnded(base: string, clients: { exitCode: number | null; signalCode: string | null }): Promise<string> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const ends = text.split("\n").filter((l) => l.startsWith('media_rpc_requests_total{method="media.v1.VideoService/Watch"'));
  const stalled = /^media_watch_streams_stalled_total (\S+)$/m.exec(text)?.[1];
  return `Watch ends ${ends.join(", ") || "none"}; stalled ${stalled}; clients ${clients.exitCode ?? clients.signalCode ?? "running"}`;
}

/**
 * What every stream must see: the snapshot first; updates whose steps strictly increase (so none
 * repeats, none goes back); a terminal message, if any, last, at the last step or later.
 */
function checkOrder(frames: RawFrame[]): any[] {
  const ms = messages(frames);
  expect(ms[0]?.event_type).toBe("snapshot");
  const steps = ms.map(stepOf);
  const tail = () => `steps ...${steps.slice(-8).join(",")} of ${steps.length}`;
  for (let i = 1; i < steps.length; i++) {
    if (ms[i].event_type === "updated") expect(steps[i], tail()).toBeGreaterThan(steps[i - 1]!);
    else expect(i, `${ms[i].event_type} is the last message`).toBe(ms.length - 1);
    expect(steps[i], tail()).toBeGreaterThanOrEqual(steps[i - 1]!);
  }
  const times = ms.map((m) => Date.parse(m.video.updated_at));
  for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThanOrEqual(times[i - 1]!);
  return ms;
}

describe("Watch at scale", () => {
  it("every stream gets the snapshot, updates in order and never twice, and the terminal message last", async () => {
    const id = await newVideo();
    const streams = Array.from({ length: 40 }, (_, i) => watch(h.bases[i % h.bases.length]!, id));
    await Promise.all(streams.map((s) => s.until("snapshot", hasSnapshot)));
    const updates = 30;
    for (let step = 1; step <= updates; step++) await update(h.base, id, step);
    await ok(call(h.base, "VideoService/Delete", { id }, key));
    const ends = await Promise.all(streams.map((s) => s.until("end of stream", (r) => r.ended)));
    for (const r of ends) {
      expect(r.status).toBe(200);
      expect(endOf(r.frames)).toEqual({});
      const ms = checkOrder(r.frames);
      expect(ms.at(-1)!.event_type).toBe("deleted");
      expect(ms.slice(1, -1).every((m) => m.event_type === "updated")).toBe(true);
      // A reading stream may still skip an update superseded before it had room, never the last state.
      expect(stepOf(ms.at(-1))).toBe(updates);
    }
    // The bytes of one update are the same on every stream of a gateway.
    const last = ends.map((r) =>
      r.frames
        .filter((f) => f.flags === 0)
        .at(-1)!
        .data.toString("utf8"),
    );
    expect(new Set(last.filter((_, i) => i % h.bases.length === 0)).size).toBe(1);
    for (const s of streams) s.close();
  });

  it("binary and gRPC-web streams (gzip accepted) get the same updates, framed for their protocol, and a clean end", async () => {
    const id = await newVideo();
    const request = Buffer.from(toBinary(WatchVideoRequestSchema, create(WatchVideoRequestSchema, { id })));
    const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), request]);
    framed.writeUInt32BE(request.length, 1);
    const auth = { authorization: headers.authorization!, "x-organization-id": headers["x-organization-id"]! };
    const calls = {
      connect: { ...auth, "content-type": "application/connect+proto", "connect-protocol-version": "1", "connect-accept-encoding": "gzip" },
      grpcWeb: { ...auth, "content-type": "application/grpc-web+proto", "grpc-accept-encoding": "gzip", "x-grpc-web": "1" },
    };
    const streams = Object.values(calls).map((hs) => new RawStream(h.bases[0]!, "/media.v1.VideoService/Watch", hs, framed));
    await Promise.all(streams.map((s) => s.until("snapshot", hasSnapshot)));
    for (let step = 1; step <= 3; step++) await update(h.base, id, step);
    await ok(call(h.base, "VideoService/Delete", { id }, key));
    const [connect, grpcWeb] = await Promise.all(streams.map((s) => s.until("end of stream", (r) => r.ended)));
    const decoded = (frames: RawFrame[]) =>
      frames
        .filter((f) => f.flags === 0 || f.flags === 1)
        .map((f) => fromBinary(WatchVideoResponseSchema, f.flags === 1 ? gunzipSync(f.data) : f.data))
        .map((m) => `${m.eventType}:${(m.video?.description ?? "").split(":")[0]}`);
    expect(decoded(connect!.frames)).toEqual(["snapshot:", "updated:1", "updated:2", "updated:3", "deleted:3"]);
    expect(decoded(grpcWeb!.frames)).toEqual(decoded(connect!.frames));
    // The same bytes, whatever the protocol's framing around them.
    expect(connect!.frames.slice(1, -1).map((f) => f.data.toString("hex"))).toEqual(grpcWeb!.frames.slice(1, -1).map((f) => f.data.toString("hex")));
    expect(connect!.frames.some((f) => f.flags === 1)).toBe(true); // ~2 KiB messages: gzipped, as Connect does above 1 KiB
    expect(JSON.parse(connect!.frames.at(-1)!.data.toString())).toEqual({});
    expect(grpcWeb!.frames.at(-1)!.data.toString()).toMatch(/grpc-status: ?0/);
    for (const s of streams) s.close();
  });

  it("a stream that stops reading gets the latest state when it resumes, then the end", async () => {
    const id = await newVideo();
    const base = h.bases[0]!;
    const reader = watch(base, id);
    await reader.until("snapshot", hasSnapshot);
    reader.pause();
    const superseded = await metric(base, "media_watch_updates_superseded_total");
    // Updates until the socket pushes back and the gateway starts replacing this stream's unsent update.
    let step = 0;
    while (step < 5000) {
      for (let i = 0; i < 10; i++) await update(h.base, id, ++step);
      if ((await metric(base, "media_watch_updates_superseded_total")) > superseded) break;
    }
    const latest = ++step;
    await update(h.base, id, latest);
    reader.resume();
    const resumed = await reader.until("the latest state", (r) => messages(r.frames).some((m) => stepOf(m) === latest));
    const ms = checkOrder(resumed.frames);
    expect(ms.length - 1, `${ms.length - 1} messages for ${latest} updates`).toBeLessThan(latest);
    await ok(call(h.base, "VideoService/Delete", { id }, key));
    const ended = await reader.until("end of stream", (r) => r.ended);
    expect(endOf(ended.frames)).toEqual({});
    expect(checkOrder(ended.frames).at(-1)!.event_type).toBe("deleted");
    reader.close();
  });

  it("a stream with a deadline (connect-timeout-ms) gets its updates until then, and then deadline_exceeded", async () => {
    const id = await newVideo();
    const started = Date.now();
    const timed = new RawStream(h.bases[0]!, "/media.v1.VideoService/Watch", { ...headers, "connect-timeout-ms": "1500" }, enveloped({ id }));
    await timed.until("snapshot", hasSnapshot);
    await update(h.base, id, 1);
    await timed.until("the update", (r) => messages(r.frames).some((m) => stepOf(m) === 1));
    const ended = await timed.until("end of stream", (r) => r.ended);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(endOf(ended.frames)?.error?.code).toBe("deadline_exceeded");
    checkOrder(ended.frames);
    timed.close();
  });

  it(`a stream that never reads is ended with resource_exhausted after ${STALL_SECONDS} s of back-pressure`, async () => {
    const id = await newVideo();
    const base = h.bases[0]!;
    const stalled = await metric(base, "media_watch_streams_stalled_total");
    const open = await metric(base, 'media_watch_streams_open{resource="video"}');
    const sleeper = watch(base, id);
    sleeper.pause();
    await until("the stream to open", async () => ((await metric(base, 'media_watch_streams_open{resource="video"}')) > open ? true : undefined));
    const started = Date.now();
    let step = 0;
    while (Date.now() - started < 120_000) {
      for (let i = 0; i < 10; i++) await update(h.base, id, ++step);
      if ((await metric(base, "media_watch_streams_stalled_total")) > stalled) break;
    }
    expect(await metric(base, "media_watch_streams_stalled_total")).toBe(stalled + 1);
    // Ended on the gateway, though the client has read nothing yet.
    await until("the stream to close", async () => ((await metric(base, 'media_watch_streams_open{resource="video"}')) === open ? true : undefined));
    sleeper.resume();
    const ended = await sleeper.until("end of stream", (r) => r.ended);
    checkOrder(ended.frames);
    const end = endOf(ended.frames);
    expect(end?.error?.code).toBe("resource_exhausted");
    expect(end?.error?.message).toMatch(new RegExp(`read nothing for ${STALL_SECONDS} s.*watch again`));
    sleeper.close();
  });
});

// Its own gateways, whose stall limit outlasts the test: with the 5 s of the others, these streams
// would be ended as stalled while the updates flow, and the figures would measure ended streams.
describe("Watch: streams that read nothing", () => {
  let m: Harness;
  beforeAll(async () => {
    m = await startHarness({ MEDIA_WATCH_STALL_SECONDS: "600", MEDIA_RATE_LIMIT_KEY: "off" });
  });
  afterAll(async () => {
    await m?.server.close();
  });

  it("1,000 streams that read nothing: memory stays flat while updates flow past them, under 64 KiB a stream in all, 24 KiB of it in the heap", async () => {
    const id = await newVideo(m);
    const auth = authOf(m);
    const base = m.bases[0]!;
    const rss = () => metric(base, "process_resident_memory_bytes");
    const heap = () => metric(base, "nodejs_heap_size_used_bytes");
    const opened = await metric(base, 'media_watch_streams_open{resource="video"}');
    // Each figure of what the streams hold is taken after a full collection: without one, it is
    // mostly how far V8 let garbage grow since its last (90-110 MiB of this gateway's RSS here).
    await m.collectGarbage(base);
    const [before, heapBefore] = [await rss(), await heap()];
    const url = new URL(base);
    const body = enveloped({ id });
    const head = [
      `POST /media.v1.VideoService/Watch HTTP/1.1`,
      `host: ${url.host}`,
      `content-length: ${body.length}`,
      ...Object.entries({ ...headers, authorization: `Bearer ${auth.bearer}`, "x-organization-id": auth.org }).map(([k, v]) => `${k}: ${v}`),
    ];
    const request = Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`), body]);
    const clients = spawn("python3", [path.join(ROOT, "test/non-readers.py"), url.hostname, url.port, "1000", request.toString("hex")], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        clients.stdout.once("data", () => resolve());
        clients.once("exit", (code) => reject(new Error(`non-readers exited with ${code}`)));
      });
      await until(
        "1,000 streams open",
        async () => ((await metric(base, 'media_watch_streams_open{resource="video"}')) >= opened + 1000 ? true : undefined),
        120_000,
      );
      const superseded = await metric(base, "media_watch_updates_superseded_total");
      // Updates until the sockets push back and the gateway keeps only the latest update of each stream.
      let step = 0;
      while (step < 3000 && (await metric(base, "media_watch_updates_superseded_total")) < superseded + 1000) {
        for (let i = 0; i < 20; i++) await update(m.base, id, ++step, auth);
      }
      // At least 1,000: one update may replace an unsent one on all 1,000 streams at once.
      expect(await metric(base, "media_watch_updates_superseded_total")).toBeGreaterThanOrEqual(superseded + 1000);
      const pushedBackAt = Date.now();
      await m.collectGarbage(base);
      const [pushedBack, heapPushedBack] = [await rss(), await heap()];
      // From here every update waits on every stream: kept for each, 100 more (~4 KiB each) would be 400 MiB.
      let peak = pushedBack;
      for (let i = 0; i < 100; i++) {
        await update(m.base, id, ++step, auth);
        if (i % 10 === 9) peak = Math.max(peak, await rss());
      }
      const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
      await m.collectGarbage(base);
      const [after, heapAfter] = [await rss(), await heap()];
      // Still open, past the 10 s after which uWS closes a socket that takes nothing unless the
      // host keeps it for the stall limit: what was measured is what open streams hold.
      await new Promise((r) => setTimeout(r, Math.max(0, 12_000 - (Date.now() - pushedBackAt))));
      expect(await metric(base, 'media_watch_streams_open{resource="video"}'), await whyEnded(base, clients)).toBeGreaterThanOrEqual(opened + 1000);
      const seen =
        `RSS ${mib(before)} before the streams, ${mib(pushedBack)} once they pushed back, ${mib(after)} 100 updates later (peak ${mib(peak)}); ` +
        `heap ${mib(heapBefore)}, ${mib(heapPushedBack)}, ${mib(heapAfter)}`;
      console.log(seen);
      expect(after - pushedBack, seen).toBeLessThan(8 * MiB);
      expect(heapAfter - heapPushedBack, seen).toBeLessThan(4 * MiB);
      // Uncollected garbage included, nowhere near the 400 MiB that keeping the updates would take.
      expect(peak - pushedBack, seen).toBeLessThan(64 * MiB);
      expect((pushedBack - before) / 1000, seen).toBeLessThan(64 * 1024);
      expect((heapPushedBack - heapBefore) / 1000, seen).toBeLessThan(24 * 1024);
    } finally {
      clients.stdin.end();
      clients.kill();
    }
  });
});

describe.skipIf(TARGET === "cluster")("Watch on the node:http host", () => {
  let node: Harness;
  beforeAll(async () => {
    node = await startHarness({ MEDIA_WATCH_STALL_SECONDS: "2", MEDIA_RATE_LIMIT_KEY: "off", MEDIA_HTTP_SERVER: "node" });
  });
  afterAll(async () => {
    await node?.server.close();
  });

  it("a stream that never reads is ended there too, its error written though the client reads nothing", async () => {
    const auth = { bearer: node.boot.api_key, org: node.boot.organization_id };
    const created = await ok(
      call(node.base, "VideoService/CreateUpload", { app_id: node.boot.app_id, filename: "n.mp4", content_type: "video/mp4", size_bytes: 10 }, auth),
    );
    const id = created.video.id as string;
    const reader = new RawStream(
      node.base,
      "/media.v1.VideoService/Watch",
      { ...headers, authorization: `Bearer ${node.boot.api_key}`, "x-organization-id": node.boot.organization_id },
      enveloped({ id }),
    );
    await reader.until("snapshot", hasSnapshot);
    reader.pause();
    // Embedded, both servers count in this process's registry: from where they stand now.
    const stalled = await metric(node.base, "media_watch_streams_stalled_total");
    const open = await metric(node.base, 'media_watch_streams_open{resource="video"}');
    const started = Date.now();
    let step = 0;
    while (Date.now() - started < 120_000 && (await metric(node.base, "media_watch_streams_stalled_total")) === stalled) {
      for (let i = 0; i < 10; i++) await ok(call(node.base, "VideoService/Update", { id, description: `${++step}:${PADDING}` }, auth));
    }
    await until("the stream to close", async () => ((await metric(node.base, 'media_watch_streams_open{resource="video"}')) === open - 1 ? true : undefined));
    reader.resume();
    const ended = await reader.until("end of stream", (r) => r.ended);
    checkOrder(ended.frames);
    expect(endOf(ended.frames)?.error?.code).toBe("resource_exhausted");
    reader.close();
  });
});
