// List paging over the store's ordered partitions: limit 1-100 (default 20), offset, and opaque,
// signed cursors bound to one list, so a forged or foreign cursor is refused.
import { create } from "@bufbuild/protobuf";
import { invalid, type FieldViolation } from "./errors.js";
import { PaginationResponseSchema, type PaginationRequest, type PaginationResponse } from "./gen/media/v1/common_pb.js";
import type { SecretBox } from "./secrets.js";
import type { Store, StoredRecord } from "./store/port.js";

export const PAGE = { defaultLimit: 20, minLimit: 1, maxLimit: 100 } as const;

export interface Page<T> {
  readonly items: readonly T[];
  readonly pagination: PaginationResponse;
}

/** Sort key of a record listed newest first: creation time, then id to break ties. */
export function sortKey(createdAtMs: number, id: string): string {
  return `${String(createdAtMs).padStart(15, "0")}:${id}`;
}

export function pageViolations(p: PaginationRequest | undefined, path = "pagination"): FieldViolation[] {
  const out: FieldViolation[] = [];
  if (!p) return out;
  if (p.limit !== undefined && (p.limit < PAGE.minLimit || p.limit > PAGE.maxLimit)) {
    out.push({ field: `${path}.limit`, description: `must be between ${PAGE.minLimit} and ${PAGE.maxLimit}` });
  }
  if (p.offset !== undefined && p.offset < 0) out.push({ field: `${path}.offset`, description: "must not be negative" });
  if (p.offset !== undefined && p.offset > 0 && p.cursor !== "") {
    out.push({ field: `${path}.offset`, description: "use either cursor or offset, not both" });
  }
  return out;
}

export class Paginator {
  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
  ) {}

  /** `listId` names the list (method and scope) a cursor is valid for. */
  async page<T>(
    table: string,
    partition: string,
    listId: string,
    request: PaginationRequest | undefined,
    filter?: (value: T) => boolean,
  ): Promise<Page<StoredRecord<T>>> {
    const violations = pageViolations(request);
    if (violations.length > 0) throw invalid(violations);
    const limit = request?.limit ?? PAGE.defaultLimit;
    const before = request?.cursor ? this.openCursor(request.cursor, listId) : undefined;
    const result = await this.store.scan<T>(table, partition, {
      limit,
      ...(before !== undefined ? { before } : {}),
      ...(request?.offset ? { offset: request.offset } : {}),
      ...(filter ? { filter } : {}),
    });
    const last = result.items.at(-1);
    const nextCursor = result.more && last ? this.sealCursor(listId, last.sort) : "";
    return {
      items: result.items,
      pagination: create(PaginationResponseSchema, { nextCursor, totalCount: BigInt(result.total) }),
    };
  }

  /** Pages an already-ordered list (newest first by `sort`) held in memory, with the same cursors. */
  pageOf<T extends { readonly sort: string }>(items: readonly T[], listId: string, request: PaginationRequest | undefined): Page<T> {
    const violations = pageViolations(request);
    if (violations.length > 0) throw invalid(violations);
    const limit = request?.limit ?? PAGE.defaultLimit;
    const before = request?.cursor ? this.openCursor(request.cursor, listId) : undefined;
    const after = before === undefined ? items : items.filter((i) => i.sort < before);
    const start = request?.offset ?? 0;
    const slice = after.slice(start, start + limit);
    const last = slice.at(-1);
    const nextCursor = start + limit < after.length && last ? this.sealCursor(listId, last.sort) : "";
    return { items: slice, pagination: create(PaginationResponseSchema, { nextCursor, totalCount: BigInt(items.length) }) };
  }

  private sealCursor(listId: string, sort: string): string {
    const body = Buffer.from(JSON.stringify([listId, sort])).toString("base64url");
    return `${body}.${this.box.sign(body)}`;
  }

  private openCursor(cursor: string, listId: string): string {
    const bad = invalid([{ field: "pagination.cursor", description: "is not a cursor this list issued" }]);
    const [body, signature] = cursor.split(".");
    if (!body || !signature || !this.box.verify(body, signature)) throw bad;
    try {
      const [id, sort] = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as [string, string];
      if (id !== listId || typeof sort !== "string") throw bad;
      return sort;
    } catch {
      throw bad;
    }
  }
}
