// Publishing a progressive HLS output while it encodes (a hosted video's stream): every new
// segment, then its media playlist, goes to storage as ffmpeg writes them; once the first rung and
// the audio have a segment each, a master listing only them makes the video playable; once every
// other rung is complete, the master lists them too. A player that starts before the end sees a
// growing EVENT playlist that begins at 0 (EXT-X-START) and ends with EXT-X-ENDLIST. The playlists'
// text, as published, and the growing master come from manifests/; this file stores them.
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { ended, withStartAtZero } from "./manifests/growing-playlists.js";
import { parseMediaPlaylist } from "./manifests/media-playlist.js";

export { START_AT_ZERO } from "./manifests/growing-playlists.js";
import type { RenditionResult } from "../actors/job/messages.js";
import type { OutputPlan, ProgressivePlan } from "./plan.js";

/** How often a publisher looks for the first segments: a wait here is a wait for the first frame. */
const UNTIL_PLAYABLE_MS = 40;

export interface PublisherDeps {
  /** Stores a local file under its path relative to the plan's dir. */
  readonly put: (rel: string, file: string) => Promise<void>;
  /** Writes a master listing the variants of these media playlists to this file. */
  readonly writeMaster: (playlists: readonly string[], file: string) => Promise<void>;
  /** The first rung and the audio are published (the output is playable), then again whenever more rungs are complete: the complete rungs. */
  readonly onPublished: (complete: RenditionResult[]) => Promise<void>;
  /** A scratch folder outside the plan's dir for the playlists as published. */
  readonly scratch: string;
}

/** Publishes a progressive plan as it grows; `sync` is called again and again while it runs, never twice at once. */
export class ProgressivePublisher {
  /** Files stored, relative to the plan's dir (segments are final once a playlist lists them). */
  readonly stored = new Set<string>();
  private readonly published = new Map<string, string>();
  private playable = false;
  private complete = false;
  /** Complete rungs told, by playlist. */
  private readonly told = new Set<string>();
  /** Bytes stored per rung folder. */
  private readonly bytes = new Map<string, number>();
  private readonly growth: ProgressivePlan;

  constructor(
    private readonly plan: OutputPlan,
    private readonly d: PublisherDeps,
  ) {
    this.growth = plan.progressive!;
  }

  /** Whether the output was made playable: its published playlists must then end, whatever happens. */
  get isPlayable(): boolean {
    return this.playable;
  }

  /**
   * Stores what is new; makes the output playable, then complete, when it can. Answers how long to
   * wait before the next call: briefly until the output is playable (its first segment is what a
   * viewer waits for), then as runPlan does by default.
   */
  async sync(): Promise<number | undefined> {
    await this.store();
    return this.playable ? undefined : UNTIL_PLAYABLE_MS;
  }

  private async store(): Promise<void> {
    const finished = new Map<string, boolean>();
    for (const playlist of [...this.growth.first, ...this.growth.rest]) {
      const text = await readFile(path.join(this.plan.dir, playlist), "utf8").catch(() => undefined);
      if (text === undefined) continue;
      const media = parseMediaPlaylist(text);
      if (media.segments.length === 0) continue;
      const folder = path.posix.dirname(playlist);
      for (const uri of [...(media.init ? [media.init] : []), ...media.segments.map((s) => s.uri)]) {
        const rel = path.posix.join(folder, uri);
        if (this.stored.has(rel)) continue;
        const file = path.join(this.plan.dir, rel);
        await this.d.put(rel, file);
        this.stored.add(rel);
        this.bytes.set(folder, (this.bytes.get(folder) ?? 0) + (await stat(file)).size);
      }
      await this.publish(playlist, withStartAtZero(text));
      finished.set(playlist, text.includes("#EXT-X-ENDLIST"));
    }
    let news = false;
    if (!this.playable && this.growth.first.every((p) => finished.has(p))) {
      await this.master([this.growth.first[0]!]);
      this.playable = true;
      news = true;
    }
    if (this.playable && !this.complete && this.growth.rest.length > 0 && this.growth.rest.every((p) => finished.get(p) === true)) {
      await this.master([this.growth.first[0]!, ...this.growth.rest]);
      this.complete = true;
    }
    if (!this.playable) return;
    // A rung is complete once its playlist ends and, for the later rungs, once the master lists it.
    for (const r of this.plan.renditions ?? []) {
      const listed = r.file === this.growth.first[0] || this.complete;
      if (listed && finished.get(r.file) === true && !this.told.has(r.file)) {
        this.told.add(r.file);
        news = true;
      }
    }
    if (news) await this.d.onPublished(this.completeRungs());
  }

  private completeRungs(): RenditionResult[] {
    return (this.plan.renditions ?? [])
      .filter((r) => this.told.has(r.file))
      .map((r) => {
        const folder = path.posix.dirname(r.file);
        const playlist = this.published.get(r.file) ?? "";
        return { name: r.name, codec: r.codec, width: r.width, height: r.height, sizeBytes: (this.bytes.get(folder) ?? 0) + Buffer.byteLength(playlist) };
      });
  }

  /** After a failure or a cancel: every published playlist ends where it is, so players play what there is and stop. */
  async end(): Promise<void> {
    for (const [playlist, text] of this.published) await this.publish(playlist, ended(text));
  }

  /**
   * The playlists ffmpeg left, rewritten in place as they were published (with EXT-X-START), for
   * the output's final upload; the segments already stored need not go again.
   */
  async finish(): Promise<void> {
    for (const playlist of [...this.growth.first, ...this.growth.rest]) {
      const file = path.join(this.plan.dir, playlist);
      await writeFile(file, withStartAtZero(await readFile(file, "utf8")));
    }
  }

  private async publish(playlist: string, text: string): Promise<void> {
    if (this.published.get(playlist) === text) return;
    const file = path.join(this.d.scratch, playlist);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
    await this.d.put(playlist, file);
    this.published.set(playlist, text);
  }

  private async master(playlists: readonly string[]): Promise<void> {
    // Beside the plan's dir: the master runPlan writes there at the end is the final one.
    const file = path.join(this.d.scratch, this.plan.main);
    await mkdir(path.dirname(file), { recursive: true });
    await this.d.writeMaster(playlists, file);
    await this.d.put(this.plan.main, file);
  }
}
