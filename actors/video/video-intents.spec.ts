// How each video intent is carried out over in-process adapters: Watch updates and the job's start
// on the bus, the ledger fan-out on the store, and the removal of files from managed storage.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../src/bus/memory-bus.js";
import type { OutgoingMessage } from "../../src/bus/port.js";
import { topicsFor } from "../../src/bus/topics.js";
import { partsPrefix, playPrefix, sourceKey } from "../../src/hosting.js";
import { LocalManagedStorage } from "../../src/managed-storage.js";
import { FileStore } from "../../src/store/file-store.js";
import type { JobRequest } from "../job/messages.js";
import { derivedId, EVENT_FANOUT, EVENTS, type EventRecord } from "../ledger.js";
import { request, videoRecord } from "./video.fixtures.js";
import { videoIntentHandlers } from "./video.js";
import type { VideoRecord, VideoState } from "./messages.js";

/** A bus that keeps what is published instead of delivering it. */
class RecordingBus extends MemoryBus {
  readonly sent: { topic: string; key: string; value: unknown }[] = [];
  override async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    for (const m of messages) this.sent.push({ topic, key: m.key, value: JSON.parse(new TextDecoder().decode(m.value)) });
  }
}

/** A ready video whose multipart upload is recorded. */
const video = (over: Partial<VideoRecord> = {}): VideoRecord =>
  videoRecord({
    version: 4,
    status: "ready",
    upload: { kind: "multipart", uploadId: "up_1", filename: "a.mp4", sizeBytes: 100, partSizeBytes: 50, expiresAt: 5000 },
    updatedAt: 2000,
    ...over,
  });

const topics = topicsFor("t");
const ctx = (state: VideoState, recovered = false) => ({ type: "video", id: "vid_1", state, seq: 3, recovered });

async function setup() {
  const bus = new RecordingBus();
  const dir = mkdtempSync(path.join(tmpdir(), "video-intents-"));
  const store = new FileStore(path.join(dir, "store"));
  await store.open();
  const managed = new LocalManagedStorage(path.join(dir, "managed"));
  const handlers = videoIntentHandlers({ bus, topics, store, managed });
  return { bus, store, managed, handlers };
}

async function put(managed: LocalManagedStorage, key: string): Promise<void> {
  await managed.write(
    key,
    (async function* () {
      yield new Uint8Array([1, 2, 3]);
    })(),
  );
}

describe("video intents carried out", () => {
  it("update publishes the video to Watch, keyed by entity, with its version; nothing without a video", async () => {
    const { bus, handlers } = await setup();
    const s = { video: video() };
    await handlers.update({ kind: "update" }, ctx(s));
    await handlers.update({ kind: "update" }, ctx({}));
    expect(bus.sent).toEqual([
      { topic: topics.updates, key: "video:vid_1", value: JSON.parse(JSON.stringify({ type: "video", id: "vid_1", version: 4, state: s })) },
    ]);
  });

  it("start_job tells the video's job to create itself from the request decided at creation; nothing without a video", async () => {
    const { bus, handlers } = await setup();
    await handlers.start_job({ kind: "start_job" }, ctx({ video: video({ status: "processing" }) }));
    await handlers.start_job({ kind: "start_job" }, ctx({}));
    expect(bus.sent).toEqual([
      { topic: topics.commands, key: "job:job_1", value: { type: "job", id: "job_1", command: { type: "create", id: "job_1", at: 2000, request } } },
    ]);
  });

  it("fan-out clears each event's mark, and writes its ledger rows again only when recovered", async () => {
    const { store, handlers } = await setup();
    const event: EventRecord = {
      id: derivedId("evt_", "vid_1:video.ready"),
      appId: "app_1",
      organizationId: "org_1",
      type: "video.ready",
      subject: { kind: "video", video: video() },
      requestId: "",
      apiVersion: "2026-11-01",
      createdAt: 2000,
    };
    await store.commit({ writes: [{ table: EVENT_FANOUT, id: event.id, value: { eventId: event.id } }] });
    await handlers.fanout({ kind: "fanout", events: [event] }, ctx({ video: video() }));
    expect(await store.get(EVENT_FANOUT, event.id)).toBeUndefined();
    expect(await store.get(EVENTS, event.id)).toBeUndefined();
    await handlers.fanout({ kind: "fanout", events: [event] }, ctx({ video: video() }, true));
    expect((await store.get(EVENTS, event.id))?.value).toMatchObject({ id: event.id, type: "video.ready" });
    expect(await store.get(EVENT_FANOUT, event.id)).toBeUndefined();
  });

  it("purge of the source removes the source and the upload's parts and keeps the playable files", async () => {
    const { managed, handlers } = await setup();
    const part = `${partsPrefix("vid_1", "up_1")}/00001.x`;
    const play = `${playPrefix("vid_1")}/out_0/index.m3u8`;
    for (const key of [sourceKey("vid_1"), part, play]) await put(managed, key);
    await handlers.purge({ kind: "purge", what: "source" }, ctx({ video: video() }));
    expect(await managed.stat(sourceKey("vid_1"))).toBeUndefined();
    expect(await managed.stat(part)).toBeUndefined();
    expect((await managed.stat(play))?.size).toBe(3);
  });

  it("purge of everything removes the playable files too; a video without upload parts or without a record is no trouble", async () => {
    const { managed, handlers } = await setup();
    const play = `${playPrefix("vid_1")}/out_0/index.m3u8`;
    const other = `${playPrefix("vid_2")}/out_0/index.m3u8`;
    for (const key of [sourceKey("vid_1"), play, other]) await put(managed, key);
    await handlers.purge({ kind: "purge", what: "all" }, ctx({}));
    expect((await managed.stat(play))?.size).toBe(3);
    const { upload: _upload, ...fromUrl } = video({ source: "job", url: "https://example.com/a.mp4" });
    await handlers.purge({ kind: "purge", what: "all" }, ctx({ video: fromUrl }));
    expect(await managed.stat(sourceKey("vid_1"))).toBeUndefined();
    expect(await managed.stat(play)).toBeUndefined();
    expect((await managed.stat(other))?.size).toBe(3);
  });
});
