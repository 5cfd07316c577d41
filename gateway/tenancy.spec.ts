import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { AppRecord, Directory, OrganizationRecord } from "../src/directory.js";
import type { Caller } from "./access.js";
import { actingApp, namedApp, requireActingApp, visible, visibleApp } from "./tenancy.js";

const app = (id: string, organizationId: string): AppRecord => ({ id, organizationId, name: id, status: "active", createdAt: 1, updatedAt: 1 });
const A1 = app("app_a1", "org_a");
const A2 = app("app_a2", "org_a");
const B1 = app("app_b1", "org_b");
const APPS = new Map([A1, A2, B1].map((a) => [a.id, a]));
const org = { id: "org_a" } as OrganizationRecord;
const directory = {
  app: async (id: string) => APPS.get(id),
  firstActiveApp: async (o: string) => [...APPS.values()].find((a) => a.organizationId === o),
} as unknown as Directory;
const key = { kind: "key", key: { id: "ak_1" }, app: A1, org } as unknown as Caller;
const session = { kind: "session", user: { id: "usr_1" }, staff: false, org, role: "member" } as unknown as Caller;
const noApps = { ...session, org: { id: "org_empty" } } as unknown as Caller;

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<Code | "ok"> {
  try {
    await (typeof p === "function" ? p() : p);
    return "ok";
  } catch (e) {
    return ConnectError.from(e).code;
  }
}

describe("tenancy", () => {
  it("an API key acts on its own app; naming any other app is permission_denied, existing or not", async () => {
    expect(await namedApp(directory, key, "")).toBe(A1);
    expect(await namedApp(directory, key, A1.id)).toBe(A1);
    for (const other of [A2.id, B1.id, "app_nosuchapp"]) expect(await codeOf(namedApp(directory, key, other))).toBe(Code.PermissionDenied);
  });

  it("a session acts on a named app of its organization, else its first active app", async () => {
    expect(await namedApp(directory, session, A2.id)).toBe(A2);
    expect(await namedApp(directory, session, "")).toBeUndefined();
    expect(await actingApp(directory, session, "")).toBe(A1);
    for (const other of [B1.id, "app_nosuchapp"]) expect(await codeOf(namedApp(directory, session, other))).toBe(Code.NotFound);
    expect(await codeOf(namedApp(directory, session, "not-an-app-id"))).toBe(Code.InvalidArgument);
    expect(await codeOf(requireActingApp(directory, noApps, ""))).toBe(Code.FailedPrecondition);
  });

  it("a record of another app or organization is not_found, like a missing one", async () => {
    const rec = (appId: string, organizationId: string) => ({ id: "x", appId, organizationId });
    expect(visible(key, rec(A1.id, "org_a"), "job", "x").id).toBe("x");
    expect(visible(session, rec(A2.id, "org_a"), "job", "x").id).toBe("x");
    for (const [caller, r] of [
      [key, rec(A2.id, "org_a")],
      [key, rec(B1.id, "org_b")],
      [session, rec(B1.id, "org_b")],
      [key, undefined],
    ] as const) {
      expect(await codeOf(() => visible(caller, r, "job", "x"))).toBe(Code.NotFound);
    }
    expect(await codeOf(visibleApp(directory, key, A2.id))).toBe(Code.NotFound);
    expect(await visibleApp(directory, session, A2.id)).toBe(A2);
  });
});
