// The directory's uniqueness claims when a create left only its claim behind (an orphan), and
// memberships whose user-side link lags the membership.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeEach, describe, expect, it } from "vitest";
import { CLAIM_GRACE_MS } from "./claims.js";
import { Directory, T, type IdentityClaims } from "./directory.js";
import { FileStore } from "./store/file-store.js";

const ISSUER = "https://id.example.com";
const identity = (email: string, more: Partial<IdentityClaims> = {}): IdentityClaims => ({
  issuer: ISSUER,
  subject: `sub-${email.toLowerCase()}`,
  email,
  emailVerified: true,
  firstName: "Ada",
  lastName: "L",
  ...more,
});
const codeOf = (e: unknown) => (e instanceof ConnectError ? Code[e.code] : String(e));
const rejection = (p: Promise<unknown>) => p.then(() => "ok", codeOf);

describe("directory claims", () => {
  let store: FileStore;
  let directory: Directory;
  beforeEach(async () => {
    store = new FileStore(mkdtempSync(path.join(tmpdir(), "directory-")));
    await store.open();
    directory = new Directory(store);
  });

  /** A claim without the record it names, as a create that died after its first write leaves it. */
  const orphan = (table: string, id: string, value: Record<string, unknown>) => store.commit({ writes: [{ table, id, value, expectedVersion: 0 }] });

  it("an organization slug claimed by a missing organization is free once past its grace, and a create takes it over", async () => {
    const owner = await directory.provision(identity("owner@example.com"), true);
    await orphan(T.orgSlugs, "acme", { organizationId: "org_gone", createdAt: Date.now() - CLAIM_GRACE_MS - 1 });
    await orphan(T.orgSlugs, "legacy", { organizationId: "org_gone" }); // from before claims were stamped: old
    expect(await directory.slugTaken("acme")).toBe(false);
    expect(await directory.slugTaken("legacy")).toBe(false);

    const org = await directory.createOrganization(owner, { name: "Acme", slug: "acme" });
    expect(await store.get(T.orgSlugs, "acme")).toMatchObject({ version: 2, value: { organizationId: org.id } });
    expect(await directory.slugTaken("acme")).toBe(true);
    expect(await rejection(directory.createOrganization(owner, { name: "Again", slug: "acme" }))).toBe("AlreadyExists");
    expect((await directory.userOrganizations(owner.id)).map((o) => o.org.id)).toEqual([org.id]);
    expect(await rejection(directory.createOrganization(owner, { name: "Legacy", slug: "legacy" }))).toBe("ok");
  });

  it("a fresh orphan slug claim still blocks: its create may be in flight", async () => {
    const owner = await directory.provision(identity("owner@example.com"), true);
    await orphan(T.orgSlugs, "busy", { organizationId: "org_writing", createdAt: Date.now() });
    expect(await directory.slugTaken("busy")).toBe(true);
    expect(await rejection(directory.createOrganization(owner, { name: "Busy", slug: "busy" }))).toBe("AlreadyExists");
    expect(await store.get(T.orgSlugs, "busy")).toMatchObject({ version: 1, value: { organizationId: "org_writing" } });
  });

  it("an email claimed by a missing user reads as absent; a first login takes it over after the grace", async () => {
    await orphan(T.userEmails, "old@example.com", { userId: "usr_gone", createdAt: Date.now() - CLAIM_GRACE_MS - 1 });
    expect(await directory.userByEmail("old@example.com")).toBeUndefined();
    const user = await directory.provision(identity("Old@Example.com"), false);
    expect(user).toMatchObject({ email: "old@example.com", approvalStatus: "pending" });
    expect(await store.get(T.userEmails, "old@example.com")).toMatchObject({ version: 2, value: { userId: user.id } });
    expect((await directory.userByEmail("old@example.com"))?.id).toBe(user.id);
    expect((await directory.provision(identity("old@example.com"), false)).id).toBe(user.id);
  });

  it("a fresh orphan identity link blocks a first sign-in, which asks for a retry", async () => {
    await orphan(T.userIdentities, `${ISSUER} sub-new@example.com`, { userId: "usr_writing", createdAt: Date.now() });
    expect(await rejection(directory.provision(identity("new@example.com"), true))).toBe("Aborted");
    expect(await store.get(T.userIdentities, `${ISSUER} sub-new@example.com`)).toMatchObject({ version: 1, value: { userId: "usr_writing" } });
  });

  it("a fresh orphan email claim leaves the email unclaimed: the new user is not verified by it", async () => {
    await orphan(T.userEmails, "new@example.com", { userId: "usr_writing", createdAt: Date.now() });
    const user = await directory.provision(identity("new@example.com"), false);
    expect(user).toMatchObject({ email: "new@example.com", emailVerified: false });
    expect(await store.get(T.userEmails, "new@example.com")).toMatchObject({ version: 1, value: { userId: "usr_writing" } });
  });

  it("an unverified email never joins the user holding it; a verified one joins a user without this issuer once", async () => {
    const owner = await directory.provision(identity("owner@example.com", { issuer: "media-bootstrap", subject: "owner@example.com" }), true);
    const impostor = await directory.provision(identity("owner@example.com", { subject: "attacker", emailVerified: false }), false);
    expect(impostor.id).not.toBe(owner.id);
    expect(impostor).toMatchObject({ approvalStatus: "pending", emailVerified: false });
    expect((await directory.userByEmail("owner@example.com"))?.id).toBe(owner.id);

    const linked = await directory.provision(identity("owner@example.com", { subject: "the-owner" }), false);
    expect(linked.id).toBe(owner.id);
    expect(linked.issuers).toEqual(["media-bootstrap", ISSUER]);
    // A second subject of the same issuer with the same verified email is someone else.
    const other = await directory.provision(identity("owner@example.com", { subject: "recycled-address" }), false);
    expect(other.id).not.toBe(owner.id);
  });

  it("a changed email at the provider keeps the identity and moves the claim when verified and free", async () => {
    const user = await directory.provision(identity("before@example.com", { subject: "s1" }), true);
    const later = await directory.provision(identity("after@example.com", { subject: "s1" }), true);
    expect(later).toMatchObject({ id: user.id, email: "after@example.com" });
    expect((await directory.userByEmail("after@example.com"))?.id).toBe(user.id);
    expect(await directory.userByEmail("before@example.com")).toBeUndefined();
    const unverified = await directory.provision(identity("third@example.com", { subject: "s1", emailVerified: false }), true);
    expect(unverified).toMatchObject({ id: user.id, email: "after@example.com" });
  });

  it("deletion releases the email and identities: the same person signing in again is a new user", async () => {
    const user = await directory.provision(identity("gone@example.com"), true);
    const deleted = await directory.deleteUser(user.id);
    expect(deleted).toMatchObject({ status: "deleted", firstName: "", lastName: "" });
    expect(deleted.sessionsValidAfter).toBeGreaterThan(0);
    expect(await directory.userByEmail("gone@example.com")).toBeUndefined();
    const again = await directory.provision(identity("gone@example.com"), false);
    expect(again.id).not.toBe(user.id);
    expect(again.status).toBe("active");
  });

  it("lists an organization only while the membership itself is active, whatever its link says", async () => {
    const owner = await directory.provision(identity("owner@example.com"), true);
    const member = await directory.provision(identity("member@example.com"), true);
    const org = await directory.createOrganization(owner, { name: "Acme", slug: "acme" });
    const m = await directory.addMember(org.id, member, "member");
    // A membership change whose link write never happened: the row is inactive, the link still active.
    await store.commit({ writes: [{ table: T.memberships, id: `${org.id}:${member.id}`, value: { ...m, isActive: false } }] });
    expect(await directory.userOrganizations(member.id)).toEqual([]);
    expect((await directory.userOrganizations(owner.id)).map((o) => o.membership.role)).toEqual(["owner"]);
  });
});
