// What an API key's bearer is: the key, read on every call (a revoke holds from the moment it is
// answered, at every gateway), and its app and organization, kept a few seconds. Without them a
// call with a key costs three store reads before its own work; with them, one.
import { API_KEY_HASHES, API_KEYS, type ApiKeyRecord, type KeyByHash } from "../actors/api-key/messages.js";
import { T, type AppRecord, type Directory, type OrganizationRecord } from "../src/directory.js";
import type { Store } from "../src/store/port.js";
import type { FollowUpdates } from "./hosting-edge.js";

export interface KeyCaller {
  readonly key: ApiKeyRecord;
  readonly app: AppRecord | undefined;
  readonly org: OrganizationRecord | undefined;
}

interface Entry {
  readonly at: number;
  readonly value: AppRecord | OrganizationRecord | undefined;
}

/**
 * Apps and organizations of the keys in use. An entry goes when its record changes: at once at the
 * gateway that made the change (`changed`, which the directory calls after an app's archive or
 * update, an organization's suspension...), which also announces it on the updates topic, and at
 * every other gateway when the announcement arrives (`follow`, subscribed before the read, so a
 * change that lands during a read keeps what the read returned out). The time to live bounds what a
 * missed announcement could leave behind. Only the records real keys name are kept: a made-up key
 * is refused at its own row and fills nothing.
 */
export class KeyCallers {
  private readonly entries = new Map<string, Entry>();
  /** Unsubscribe functions of the records followed, one per entry ("<table>:<id>"). */
  private readonly following = new Map<string, () => void>();
  /** Bumped by every change: a read that started before one is returned but not kept. */
  private changes = 0;

  constructor(
    private readonly d: { readonly store: Store; readonly directory: Directory },
    private readonly follow: FollowUpdates | undefined,
    private readonly announce: (table: string, id: string) => Promise<void>,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The key a secret's hash names, with its app and organization; undefined for no key. */
  async resolve(hash: string): Promise<KeyCaller | undefined> {
    const link = (await this.d.store.get<KeyByHash>(API_KEY_HASHES, hash))?.value;
    const key = link && (link.key ?? (await this.d.store.get<ApiKeyRecord>(API_KEYS, link.keyId))?.value);
    if (!key) return undefined;
    const [app, org] = await Promise.all([
      this.record(T.apps, key.appId, () => this.d.directory.app(key.appId)),
      this.record(T.organizations, key.organizationId, () => this.d.directory.organization(key.organizationId)),
    ]);
    return { key, app: app as AppRecord | undefined, org: org as OrganizationRecord | undefined };
  }

  /** An app or organization changed here: forgotten now, and announced to every other gateway. */
  async changed(table: string, id: string): Promise<void> {
    this.forget(`${table}:${id}`);
    await this.announce(table, id);
  }

  /** Forgets a record ("<table>:<id>"). */
  forget(entity: string): void {
    this.changes++;
    this.entries.delete(entity);
  }

  /** How many records are held: for tests. */
  get size(): number {
    return this.entries.size;
  }

  private async record(table: string, id: string, read: () => Promise<Entry["value"]>): Promise<Entry["value"]> {
    const entity = `${table}:${id}`;
    const now = Date.now();
    const hit = this.entries.get(entity);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    if (!this.following.has(entity)) {
      if (this.following.size >= this.maxEntries) this.clear();
      this.following.set(entity, this.follow?.(table, id, () => this.forget(entity)) ?? (() => undefined));
    }
    const changes = this.changes;
    const value = await read();
    if (this.changes === changes) this.entries.set(entity, { at: now, value });
    return value;
  }

  private clear(): void {
    for (const stop of this.following.values()) stop();
    this.following.clear();
    this.entries.clear();
  }
}
