// List paging: limits, cursors that round-trip and are refused when forged or from another list,
// and offsets, over the embedded store and over lists held in memory.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeEach, describe, expect, it } from "vitest";
import { PaginationRequestSchema, type PaginationRequest } from "./gen/media/v1/common_pb.js";
import { PAGE, pageViolations, Paginator, sortKey } from "./pagination.js";
import { SecretBox } from "./secrets.js";
import { FileStore } from "./store/file-store.js";
import type { ScanOptions, ScanResult } from "./store/port.js";

const request = (init: Parameters<typeof create<typeof PaginationRequestSchema>>[1] = {}): PaginationRequest => create(PaginationRequestSchema, init);

/** The embedded store, keeping the options of every scan. */
class RecordingStore extends FileStore {
  readonly scans: object[] = [];
  override scan<T>(table: string, partition: string, options: ScanOptions<T>): Promise<ScanResult<T>> {
    this.scans.push(options);
    return super.scan(table, partition, options);
  }
}

const ids = Array.from({ length: 25 }, (_, i) => `r${String(i + 1).padStart(2, "0")}`);
/** Newest first, as lists are shown. */
const newestFirst = [...ids].reverse();
const box = new SecretBox("server secret");

function caught(f: () => unknown): ConnectError {
  try {
    f();
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("nothing was thrown");
}
const refusedCursor = { code: Code.InvalidArgument, rawMessage: "pagination.cursor: is not a cursor this list issued" };

describe("sortKey", () => {
  it("orders by creation time, then id, as text", () => {
    expect(sortKey(1234, "x")).toBe("000000000001234:x");
    expect(sortKey(99, "b") < sortKey(100, "a")).toBe(true);
  });
});

describe("pageViolations", () => {
  it("accepts no request, limits 1 to 100, offsets from 0, and an offset of 0 with a cursor", () => {
    expect(pageViolations(undefined)).toEqual([]);
    for (const ok of [
      request(),
      request({ limit: 1 }),
      request({ limit: 100 }),
      request({ offset: 0 }),
      request({ offset: 7 }),
      request({ offset: 0, cursor: "c" }),
    ]) {
      expect(pageViolations(ok)).toEqual([]);
    }
    expect(PAGE).toEqual({ defaultLimit: 20, minLimit: 1, maxLimit: 100 });
  });

  it("names each bad field under the given path", () => {
    const limit = { field: "list.limit", description: "must be between 1 and 100" };
    expect(pageViolations(request({ limit: 0 }), "list")).toEqual([limit]);
    expect(pageViolations(request({ limit: 101 }), "list")).toEqual([limit]);
    expect(pageViolations(request({ limit: -1 }))).toEqual([{ ...limit, field: "pagination.limit" }]);
    expect(pageViolations(request({ offset: -1 }))).toEqual([{ field: "pagination.offset", description: "must not be negative" }]);
    expect(pageViolations(request({ offset: 1, cursor: "c", limit: 500 }))).toEqual([
      { field: "pagination.limit", description: "must be between 1 and 100" },
      { field: "pagination.offset", description: "use either cursor or offset, not both" },
    ]);
  });
});

describe("Paginator over the store", () => {
  let store: RecordingStore;
  let pages: Paginator;
  beforeEach(async () => {
    store = new RecordingStore(mkdtempSync(path.join(tmpdir(), "pages-")));
    await store.open();
    await store.commit({ writes: ids.map((id, i) => ({ table: "t", id, value: { n: i + 1 }, partition: "p", sort: sortKey(i + 1, id) })) });
    pages = new Paginator(store, box);
  });
  const list = (r?: PaginationRequest, filter?: (v: { n: number }) => boolean) => pages.page<{ n: number }>("t", "p", "jobs:app_1", r, filter);

  it("gives 20 by default, newest first, with the total and a cursor to the rest", async () => {
    const first = await list();
    expect(first.items.map((i) => i.id)).toEqual(newestFirst.slice(0, 20));
    expect(first.pagination.totalCount).toBe(25n);
    expect(first.pagination.nextCursor).not.toBe("");
    expect(store.scans).toStrictEqual([{ limit: 20 }]);
  });

  it("round-trips its cursors to the end of the list, where there is none", async () => {
    const seen: string[] = [];
    const scans: string[][] = [];
    let cursor = "";
    for (;;) {
      const page = await list(request({ limit: 10, cursor }));
      seen.push(...page.items.map((i) => i.id));
      scans.push(Object.keys(store.scans.at(-1)!).sort());
      expect(page.pagination.totalCount).toBe(25n);
      if (page.pagination.nextCursor === "") break;
      cursor = page.pagination.nextCursor;
    }
    expect(seen).toEqual(newestFirst);
    expect(scans).toEqual([["limit"], ["before", "limit"], ["before", "limit"]]);
    expect(store.scans[1]).toStrictEqual({ limit: 10, before: sortKey(16, "r16") });
  });

  it("skips an offset and filters, passing only what was asked", async () => {
    const even = (v: { n: number }) => v.n % 2 === 0;
    const page = await list(request({ limit: 3, offset: 2 }), even);
    expect(page.items.map((i) => i.id)).toEqual(["r20", "r18", "r16"]);
    expect(page.pagination.totalCount).toBe(12n);
    expect(store.scans).toStrictEqual([{ limit: 3, offset: 2, filter: even }]);
    const last = await list(request({ limit: 5, offset: 20 }));
    expect(last.items.map((i) => i.id)).toEqual(newestFirst.slice(20));
    expect(last.pagination.nextCursor).toBe("");
  });

  it("refuses a bad request before reading, and cursors that are forged, altered or from another list", async () => {
    await expect(list(request({ limit: 0 }))).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: "pagination.limit: must be between 1 and 100" });
    expect(store.scans).toEqual([]);
    const { nextCursor } = (await list(request({ limit: 5 }))).pagination;
    const [body, signature] = nextCursor.split(".") as [string, string];
    const altered = `${body}.${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`;
    const otherList = new Paginator(store, box);
    const foreign = (await otherList.page("t", "p", "jobs:app_2", request({ limit: 5 }))).pagination.nextCursor;
    const otherServer = (await new Paginator(store, new SecretBox("another secret")).page("t", "p", "jobs:app_1", request({ limit: 5 }))).pagination.nextCursor;
    for (const cursor of [altered, foreign, otherServer, body, `.${signature}`, `${body}.`, "garbage"]) {
      await expect(list(request({ cursor })), cursor).rejects.toMatchObject(refusedCursor);
    }
  });

  it("refuses a signed cursor whose body is not a list id and a sort key", async () => {
    const signed = (text: string) => {
      const body = Buffer.from(text).toString("base64url");
      return `${body}.${box.sign(body)}`;
    };
    for (const text of ["not json", '["jobs:app_1", 5]', '["jobs:app_2", "x"]', "{}"]) {
      await expect(list(request({ cursor: signed(text) })), text).rejects.toMatchObject(refusedCursor);
    }
    expect((await list(request({ cursor: signed('["jobs:app_1", "000000000000003:r03"]') }))).items.map((i) => i.id)).toEqual(["r02", "r01"]);
  });
});

describe("Paginator over a list in memory", () => {
  const pages = new Paginator(new FileStore(tmpdir()), box);
  const items = newestFirst.map((id) => ({ id, sort: sortKey(Number(id.slice(1)), id) }));
  const page = (r?: PaginationRequest, listId = "presets:app_1") => pages.pageOf(items, listId, r);

  it("gives 20 by default and round-trips its cursors", () => {
    const first = page();
    expect(first.items.map((i) => i.id)).toEqual(newestFirst.slice(0, 20));
    expect(first.pagination.totalCount).toBe(25n);
    const rest = page(request({ cursor: first.pagination.nextCursor }));
    expect(rest.items.map((i) => i.id)).toEqual(newestFirst.slice(20));
    expect(rest.pagination).toMatchObject({ nextCursor: "", totalCount: 25n });
  });

  it("offers a next page only while items follow, and counts the whole list", () => {
    expect(page(request({ limit: 5, offset: 19 })).pagination.nextCursor).not.toBe("");
    expect(page(request({ limit: 5, offset: 20 })).pagination.nextCursor).toBe("");
    expect(page(request({ limit: 25 })).pagination.nextCursor).toBe("");
    expect(page(request({ limit: 24 })).pagination.nextCursor).not.toBe("");
    const afterOffset = page(request({ limit: 5, offset: 5 }));
    expect(afterOffset.items.map((i) => i.id)).toEqual(newestFirst.slice(5, 10));
    // The cursor of an offset page continues after that page.
    expect(page(request({ limit: 3, cursor: afterOffset.pagination.nextCursor })).items.map((i) => i.id)).toEqual(newestFirst.slice(10, 13));
    expect(page(request({ offset: 30 }))).toMatchObject({ items: [], pagination: { nextCursor: "", totalCount: 25n } });
  });

  it("refuses bad requests and another list's cursor", () => {
    expect(caught(() => page(request({ limit: 101 })))).toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: "pagination.limit: must be between 1 and 100",
    });
    const cursor = page(request({ limit: 5 }), "presets:app_2").pagination.nextCursor;
    expect(caught(() => page(request({ cursor })))).toMatchObject(refusedCursor);
    expect(caught(() => page(request({ cursor: cursor.slice(0, -1) }), "presets:app_2"))).toMatchObject(refusedCursor);
  });
});
