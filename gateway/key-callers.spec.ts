// Two gateways' key callers over one store and one announcement channel: a key is read on every
// call; its app and organization once, until a change made at either gateway is seen there at once
// and, once announced, at the other.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { API_KEY_HASHES, type ApiKeyRecord, type KeyByHash } from "../actors/api-key/messages.js";
import { Directory, T, type IdentityClaims } from "../src/directory.js";
import { FileStore } from "../src/store/file-store.js";
import type { Store } from "../src/store/port.js";
import { KeyCallers } from "./key-callers.js";

/** The updates topic as the gateways see it: announcements held until delivered (or dropped). */
class Announcements {
  readonly listeners = new Map<string, Set<() => void>>();
  held: string[] = [];
  follow = (type: string, id: string, listener: () => void) => {
    const key = `${type}:${id}`;
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(key);
    };
  };
  announce = async (type: string, id: string) => void this.held.push(`${type}:${id}`);
  deliver(): void {
    for (const key of this.held.splice(0)) for (const l of [...(this.listeners.get(key) ?? [])]) l();
  }
}

/** Counts the store's reads. */
function counted(store: Store): { store: Store; reads: () => number } {
  let n = 0;
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "get") return (table: string, id: string) => (n++, target.get(table, id));
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { store: proxy, reads: () => n };
}

const claims: IdentityClaims = { issuer: "https://id.example.com", subject: "s", email: "o@example.com", emailVerified: true, firstName: "O", lastName: "W" };

describe("KeyCallers", () => {
  let store: FileStore;
  let bus: Announcements;
  let a: KeyCallers;
  let b: KeyCallers;
  let aDirectory: Directory;
  let reads: () => number;
  let key: ApiKeyRecord;
  const hash = "h".repeat(43);

  beforeEach(async () => {
    store = new FileStore(mkdtempSync(path.join(tmpdir(), "key-callers-")));
    await store.open();
    bus = new Announcements();
    const c = counted(store);
    reads = c.reads;
    const gateway = (): [KeyCallers, Directory] => {
      const directory: Directory = new Directory(c.store, async (table, id) => {
        if (table === T.apps || table === T.organizations) await callers.changed(table, id);
      });
      const callers: KeyCallers = new KeyCallers({ store: c.store, directory }, bus.follow, bus.announce, 5_000);
      return [callers, directory];
    };
    [a, aDirectory] = gateway();
    [b] = gateway();
    const owner = await aDirectory.provision(claims, true);
    const org = await aDirectory.createOrganization(owner, { name: "Acme", slug: "acme" });
    const app = await aDirectory.createApp(org.id, { name: "web" });
    key = {
      id: "ak_1",
      appId: app.id,
      organizationId: org.id,
      name: "k",
      keyPrefix: "ak_",
      keyHint: "abcd",
      secretHash: hash,
      scopes: [],
      createdAt: Date.now(),
    };
    await store.commit({ writes: [{ table: API_KEY_HASHES, id: hash, value: { keyId: key.id, key } satisfies KeyByHash }] });
  });

  const revoke = async (): Promise<void> => {
    const revoked = { ...key, revokedAt: Date.now() };
    await store.commit({ writes: [{ table: API_KEY_HASHES, id: hash, value: { keyId: key.id, key: revoked } satisfies KeyByHash }] });
  };

  it("reads the key on every call, its app and organization once", async () => {
    const before = reads();
    const first = await a.resolve(hash);
    expect(first?.key.id).toBe("ak_1");
    expect(first?.app?.name).toBe("web");
    expect(first?.org?.slug).toBe("acme");
    expect(reads() - before).toBe(3);
    await a.resolve(hash);
    await a.resolve(hash);
    expect(reads() - before).toBe(5);
  });

  it("a revoke is refused at every gateway from the moment it is written: the key is never kept", async () => {
    await a.resolve(hash);
    await b.resolve(hash);
    await revoke();
    expect((await a.resolve(hash))?.key.revokedAt).toBeDefined();
    expect((await b.resolve(hash))?.key.revokedAt).toBeDefined();
  });

  it("an app archived or an organization suspended is forgotten at once where it was changed, and at the other gateway when announced", async () => {
    await a.resolve(hash);
    await b.resolve(hash);
    await aDirectory.changeApp(key.appId, (x) => ({ ...x, status: "archived" }));
    expect((await a.resolve(hash))?.app?.status).toBe("archived");
    // Not yet delivered: the other gateway still answers what it read (the time to live bounds it).
    expect((await b.resolve(hash))?.app?.status).toBe("active");
    bus.deliver();
    expect((await b.resolve(hash))?.app?.status).toBe("archived");
    await aDirectory.changeOrganization(key.organizationId, (o) => ({ ...o, status: "suspended" }));
    expect((await a.resolve(hash))?.org?.status).toBe("suspended");
    bus.deliver();
    expect((await b.resolve(hash))?.org?.status).toBe("suspended");
  });

  it("a change announced while a record is being read is not lost: what that read returned is not kept", async () => {
    const directory = new Directory(store);
    let appReads = 0;
    const racing = Object.assign(Object.create(directory) as Directory, {
      // The first time, the app is archived, and the archive announced, while this gateway reads it.
      app: async (id: string) => {
        const app = await directory.app(id);
        if (appReads++ === 0) {
          await aDirectory.changeApp(id, (x) => ({ ...x, status: "archived" }));
          bus.deliver();
        }
        return app;
      },
    });
    const c = new KeyCallers({ store, directory: racing }, bus.follow, bus.announce);
    expect((await c.resolve(hash))?.app?.status).toBe("active");
    expect((await c.resolve(hash))?.app?.status).toBe("archived");
    expect(appReads).toBe(2);
    expect((await c.resolve(hash))?.app?.status).toBe("archived");
    expect(appReads).toBe(2);
  });

  it("keeps and follows nothing for a hash that names no key", async () => {
    for (let i = 0; i < 50; i++) expect(await a.resolve(`x${i}`)).toBeUndefined();
    expect(a.size).toBe(0);
    expect(bus.listeners.size).toBe(0);
  });

  it("reads a record again once the time to live has passed, even with no announcement", async () => {
    const short = new KeyCallers({ store, directory: new Directory(store) }, bus.follow, bus.announce, 20);
    await short.resolve(hash);
    await new Directory(store).changeApp(key.appId, (x) => ({ ...x, status: "archived" }));
    expect((await short.resolve(hash))?.app?.status).toBe("active");
    await new Promise((r) => setTimeout(r, 30));
    expect((await short.resolve(hash))?.app?.status).toBe("archived");
  });
});
