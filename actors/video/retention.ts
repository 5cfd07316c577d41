// Source retention: each actor host sweeps the sources due for deletion (the app's
// delete_source_after_days, unless pinned) among the videos whose commands it serves, and tells
// each video its source is gone; the video's purge intent removes the file.
import type { Logger } from "../../src/log.js";
import type { Store } from "../../src/store/port.js";
import { ownedKeys } from "../commands.js";
import type { ActorHost } from "../host.js";
import { VideoBehavior } from "./video.js";
import { SOURCE_DELETIONS, SOURCE_DELETIONS_PARTITION } from "./messages.js";

export class SourceRetention {
  private owned: (key: string) => boolean = () => false;
  private readonly timer: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly store: Store,
    private readonly host: ActorHost,
    private readonly log: Logger,
    private readonly options: { readonly partitions: number; readonly sweepMs: number },
  ) {
    this.timer = setInterval(() => void this.sweep(), options.sweepMs);
    this.timer.unref();
  }

  assign(partitions: readonly number[]): void {
    this.owned = ownedKeys(partitions, this.options.partitions);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass: every due source of an owned video is deleted (the video records it once). */
  async sweep(now = Date.now()): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const due = await this.store.scan<{ videoId: string; due: number }>(SOURCE_DELETIONS, SOURCE_DELETIONS_PARTITION, {
        limit: 1000,
        filter: (r) => r.due <= now,
      });
      for (const row of due.items) {
        if (!this.owned(`${VideoBehavior.type}:${row.value.videoId}`)) continue;
        const reply = await this.host.ask(VideoBehavior, row.value.videoId, { type: "source_deleted", at: now });
        if (!reply.ok) this.log.warn({ video_id: row.value.videoId, reason: reply.rejection.message }, "source not deleted");
      }
    } catch (e) {
      this.log.warn({ err: e }, "source retention sweep failed");
    } finally {
      this.running = false;
    }
  }
}
