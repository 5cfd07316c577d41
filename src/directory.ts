// The directory: organizations, apps, users and memberships as versioned store records.
// Every change is a conditional write on the record's version. Uniqueness (organization slug, user
// email) is a claim written before the record it names (claims.ts): a claim whose record is missing
// is an orphan, absent to lookups, and a create takes it over once its grace has passed.
import type { AppHostingRecord } from "./hosting.js";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { inGrace, type ClaimStamp } from "./claims.js";
import { alreadyExists, apiError, notFound, VersionConflict } from "./errors.js";
import { newId, Prefix } from "./ids.js";
import { sortKey } from "./pagination.js";
import type { RecordWrite, Store, StoredRecord } from "./store/port.js";

export const Roles = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof Roles)[number];
const ROLE_RANK: Record<Role, number> = { owner: 4, admin: 3, member: 2, viewer: 1 };
export const atLeast = (role: Role, minimum: Role): boolean => ROLE_RANK[role] >= ROLE_RANK[minimum];

export interface OrganizationRecord {
  readonly id: string;
  readonly name: string;
  readonly slug: string;
  readonly billingEmail?: string;
  readonly status: "active" | "suspended";
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface AppWebhookRecord {
  readonly url: string;
  readonly events: readonly string[];
  /** Encrypted at rest with the server key. */
  readonly sealedSecret?: string;
  readonly secretHint: string;
}

export interface AppRecord {
  readonly id: string;
  readonly organizationId: string;
  readonly name: string;
  readonly description?: string;
  readonly status: "active" | "archived";
  readonly hostingEnabledAt?: number;
  /** Set with hostingEnabledAt: the CDN signing keys and the hosting settings. */
  readonly hosting?: AppHostingRecord;
  readonly webhook?: AppWebhookRecord;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly archivedAt?: number;
}

export interface UserRecord {
  readonly id: string;
  readonly email: string;
  readonly emailVerified: boolean;
  readonly firstName: string;
  readonly lastName: string;
  readonly pictureUrl?: string;
  readonly status: "active" | "suspended" | "deleted";
  readonly lastLoginAt?: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly approvalStatus: "pending" | "approved" | "rejected";
  readonly approvalDecidedAt?: number;
  readonly approvalDecidedBy?: string;
  /** Issuers this user has signed in through, one subject each (the links live in user_identities). */
  readonly issuers?: readonly string[];
  /** Sessions that began before this instant are over (sign-out everywhere, suspension, deletion). */
  readonly sessionsValidAfter?: number;
}

export interface MembershipRecord {
  readonly id: string;
  readonly organizationId: string;
  readonly userId: string;
  readonly role: Role;
  readonly isActive: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export const T = {
  organizations: "organizations",
  orgSlugs: "organization_slugs",
  apps: "apps",
  users: "users",
  userEmails: "user_emails",
  userIdentities: "user_identities",
  memberships: "memberships",
  userMemberships: "user_memberships",
} as const;

/** A user's side of a membership, listed by user. */
export interface UserMembershipLink {
  readonly organizationId: string;
  readonly isActive: boolean;
}

/** Claims of a verified session token: the person is (issuer, subject); the rest are attributes. */
export interface IdentityClaims {
  readonly issuer: string;
  readonly subject: string;
  /** Empty when the provider gave none. */
  readonly email: string;
  readonly emailVerified: boolean;
  readonly firstName: string;
  readonly lastName: string;
  readonly pictureUrl?: string;
}

const membershipId = (orgId: string, userId: string) => `${orgId}:${userId}`;
const slugTakenError = (slug: string) => alreadyExists(`organization slug "${slug}" is taken`, "slug");
/** Tries of a first login while a concurrent one holds the email and writes its user. */
const PROVISION_ATTEMPTS = 5;

interface SlugClaim extends ClaimStamp {
  readonly organizationId: string;
}
interface EmailClaim extends ClaimStamp {
  readonly userId: string;
}
interface IdentityLink extends ClaimStamp {
  readonly userId: string;
}
/** The key of an (issuer, subject) link: the issuer's URL cannot hold a space. */
const identityKey = (issuer: string, subject: string) => `${issuer} ${subject}`;

export class Directory {
  /** onChange: told of every change made here (table and id), once it is written. */
  constructor(
    private readonly store: Store,
    private readonly onChange: (table: string, id: string) => Promise<void> = async () => undefined,
  ) {}

  // ── generic ──

  async read<T>(table: string, id: string): Promise<StoredRecord<T> | undefined> {
    return this.store.get<T>(table, id);
  }

  /** Read, change and write back conditionally, retrying a lost race a few times. */
  private async change<T>(table: string, id: string, what: string, fn: (current: T) => T): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.store.get<T>(table, id);
      if (!current) throw notFound(what, id);
      const next = fn(current.value);
      try {
        await this.store.commit({ writes: [{ table, id, value: next, expectedVersion: current.version }] });
        await this.onChange(table, id);
        return next;
      } catch (e) {
        if (!(e instanceof VersionConflict) || attempt >= 4) throw e;
      }
    }
  }

  // ── organizations ──

  async slugTaken(slug: string): Promise<boolean> {
    return (await this.slugClaimVersion(slug)) === undefined;
  }

  /** The version a new claim of the slug must replace (0 when unclaimed), or undefined while the slug is held. */
  private async slugClaimVersion(slug: string): Promise<number | undefined> {
    const claim = await this.store.get<SlugClaim>(T.orgSlugs, slug);
    if (!claim) return 0;
    if (inGrace(claim) || (await this.organization(claim.value.organizationId))) return undefined;
    return claim.version;
  }

  async createOrganization(owner: UserRecord, input: { name: string; slug: string; billingEmail?: string }): Promise<OrganizationRecord> {
    const claimed = await this.slugClaimVersion(input.slug);
    if (claimed === undefined) throw slugTakenError(input.slug);
    const now = Date.now();
    const org: OrganizationRecord = {
      id: newId(Prefix.organization),
      name: input.name,
      slug: input.slug,
      status: "active",
      createdAt: now,
      updatedAt: now,
      ...(input.billingEmail ? { billingEmail: input.billingEmail } : {}),
    };
    const membership: MembershipRecord = {
      id: newId(Prefix.membership),
      organizationId: org.id,
      userId: owner.id,
      role: "owner",
      isActive: true,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.store.commit({
        writes: [
          { table: T.orgSlugs, id: org.slug, value: { organizationId: org.id, createdAt: now } satisfies SlugClaim, expectedVersion: claimed },
          // The owner's membership before the organization, so no organization is left without one.
          ...this.membershipWrites(membership).map((w) => ({ ...w, expectedVersion: 0 })),
          { table: T.organizations, id: org.id, value: org, expectedVersion: 0 },
        ],
      });
    } catch (e) {
      if (e instanceof VersionConflict) throw slugTakenError(org.slug);
      throw e;
    }
    return org;
  }

  async organization(id: string): Promise<OrganizationRecord | undefined> {
    return (await this.store.get<OrganizationRecord>(T.organizations, id))?.value;
  }

  changeOrganization(id: string, fn: (o: OrganizationRecord) => OrganizationRecord): Promise<OrganizationRecord> {
    return this.change<OrganizationRecord>(T.organizations, id, "organization", (o) => ({ ...fn(o), updatedAt: Date.now() }));
  }

  updateOrganization(id: string, patch: { name?: string; billingEmail?: string }): Promise<OrganizationRecord> {
    return this.change<OrganizationRecord>(T.organizations, id, "organization", (o) => ({ ...o, ...patch, updatedAt: Date.now() }));
  }

  // ── apps ──

  async createApp(
    organizationId: string,
    input: { name: string; description?: string; webhook?: AppWebhookRecord; hosting?: AppHostingRecord },
  ): Promise<AppRecord> {
    const now = Date.now();
    const app: AppRecord = {
      id: newId(Prefix.app),
      organizationId,
      name: input.name,
      status: "active",
      createdAt: now,
      updatedAt: now,
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.webhook ? { webhook: input.webhook } : {}),
      ...(input.hosting ? { hostingEnabledAt: now, hosting: input.hosting } : {}),
    };
    await this.store.commit({ writes: [{ table: T.apps, id: app.id, value: app, partition: organizationId, sort: sortKey(now, app.id), expectedVersion: 0 }] });
    return app;
  }

  async app(id: string): Promise<AppRecord | undefined> {
    return (await this.store.get<AppRecord>(T.apps, id))?.value;
  }

  changeApp(id: string, fn: (app: AppRecord) => AppRecord): Promise<AppRecord> {
    return this.change<AppRecord>(T.apps, id, "app", (a) => ({ ...fn(a), updatedAt: Date.now() }));
  }

  /** The organization's first active app, oldest first. */
  async firstActiveApp(organizationId: string): Promise<AppRecord | undefined> {
    const all = await this.store.scan<AppRecord>(T.apps, organizationId, { limit: 10_000, filter: (a) => a.status === "active" });
    return all.items.at(-1)?.value;
  }

  // ── users ──

  async user(id: string): Promise<UserRecord | undefined> {
    return (await this.store.get<UserRecord>(T.users, id))?.value;
  }

  /** An orphan email claim (its user missing) reads as absent. */
  async userByEmail(email: string): Promise<UserRecord | undefined> {
    const claim = await this.store.get<EmailClaim>(T.userEmails, email.toLowerCase());
    return claim && this.user(claim.value.userId);
  }

  /**
   * The user an identity names. A known (issuer, subject) is its user, whatever email it now has.
   * A new one joins the user holding its email only when the provider says the email is verified
   * and that user has no other subject at this issuer (the bootstrap owner, a one-time-link user,
   * the same person through a second provider); otherwise it is a new user, pending unless
   * pre-approved, who claims the email only if verified and free.
   */
  async provision(claims: IdentityClaims, approved: boolean): Promise<UserRecord> {
    const key = identityKey(claims.issuer, claims.subject);
    const email = claims.email.toLowerCase();
    for (let attempt = 1; ; attempt++) {
      const link = await this.store.get<IdentityLink>(T.userIdentities, key);
      const linked = link && (await this.user(link.value.userId));
      if (linked) return this.syncLogin(linked, claims, approved);
      if (!link || !inGrace(link)) {
        try {
          const byEmail = claims.emailVerified ? await this.userByEmail(email) : undefined;
          if (byEmail && !byEmail.issuers?.includes(claims.issuer) && byEmail.status !== "deleted") {
            return await this.linkIdentity(byEmail, claims, approved, link?.version ?? 0);
          }
          return await this.createUser(claims, approved, link?.version ?? 0);
        } catch (e) {
          if (!(e instanceof VersionConflict)) throw e;
        }
      }
      // A concurrent first sign-in holds the identity and is writing its user.
      if (attempt >= PROVISION_ATTEMPTS) throw apiError(Code.Aborted, "another sign-in of this account is in progress; retry");
      await sleep(25 * attempt);
    }
  }

  /** Links a new (issuer, subject) to an existing user whose verified email it carries. */
  private async linkIdentity(user: UserRecord, claims: IdentityClaims, approved: boolean, linkVersion: number): Promise<UserRecord> {
    const now = Date.now();
    const current = await this.store.get<UserRecord>(T.users, user.id);
    if (!current) throw new VersionConflict(`${T.users}/${user.id}`, 1, 0);
    const next: UserRecord = {
      ...current.value,
      issuers: [...(current.value.issuers ?? []), claims.issuer],
      emailVerified: true,
      lastLoginAt: now,
      updatedAt: now,
      ...(approved && current.value.approvalStatus === "pending"
        ? { approvalStatus: "approved" as const, approvalDecidedAt: now, approvalDecidedBy: user.id }
        : {}),
    };
    await this.store.commit({
      writes: [this.linkWrite(user.id, claims, now, linkVersion), { table: T.users, id: user.id, value: next, expectedVersion: current.version }],
    });
    return next;
  }

  /** A later sign-in: the email follows the provider's when verified and free; nothing else of identity changes. */
  private async syncLogin(existing: UserRecord, claims: IdentityClaims, approved: boolean): Promise<UserRecord> {
    const now = Date.now();
    const email = claims.email.toLowerCase();
    const lastLoginStale = existing.lastLoginAt === undefined || now - existing.lastLoginAt > 60_000;
    const emailMoves = claims.emailVerified && email !== "" && email !== existing.email;
    const synced = !emailMoves && !lastLoginStale && !(approved && existing.approvalStatus === "pending");
    if (synced || existing.status === "deleted") return existing;
    if (emailMoves) {
      const claim = await this.store.get<EmailClaim>(T.userEmails, email);
      const holder = claim && (await this.user(claim.value.userId));
      if (!holder) {
        const current = await this.store.get<UserRecord>(T.users, existing.id);
        if (current) {
          const next: UserRecord = { ...current.value, email, emailVerified: true, lastLoginAt: now, updatedAt: now };
          await this.store.commit({
            writes: [
              { table: T.userEmails, id: email, value: { userId: existing.id, createdAt: now } satisfies EmailClaim, expectedVersion: claim?.version ?? 0 },
              { table: T.users, id: existing.id, value: next, expectedVersion: current.version },
              ...(current.value.emailVerified && current.value.email ? [{ table: T.userEmails, id: current.value.email, value: null }] : []),
            ],
          });
          return next;
        }
      }
    }
    return this.changeUser(existing.id, (u) => ({
      ...u,
      lastLoginAt: now,
      ...(approved && u.approvalStatus === "pending" ? { approvalStatus: "approved" as const, approvalDecidedAt: now, approvalDecidedBy: u.id } : {}),
    }));
  }

  /** Links the identity, claims the email when verified and free, then writes the user. */
  private async createUser(claims: IdentityClaims, approved: boolean, linkVersion: number): Promise<UserRecord> {
    const now = Date.now();
    const email = claims.email.toLowerCase();
    const emailClaim = claims.emailVerified && email !== "" ? await this.store.get<EmailClaim>(T.userEmails, email) : undefined;
    const claimEmail = claims.emailVerified && email !== "" && !(emailClaim && (inGrace(emailClaim) || (await this.user(emailClaim.value.userId))));
    const user: UserRecord = {
      id: newId(Prefix.user),
      email,
      emailVerified: claimEmail,
      firstName: claims.firstName,
      lastName: claims.lastName,
      status: "active",
      lastLoginAt: now,
      createdAt: now,
      updatedAt: now,
      approvalStatus: approved ? "approved" : "pending",
      issuers: [claims.issuer],
      ...(claims.pictureUrl ? { pictureUrl: claims.pictureUrl } : {}),
    };
    const approvedUser: UserRecord = approved ? { ...user, approvalDecidedAt: now, approvalDecidedBy: user.id } : user;
    await this.store.commit({
      writes: [
        this.linkWrite(user.id, claims, now, linkVersion),
        ...(claimEmail
          ? [{ table: T.userEmails, id: email, value: { userId: user.id, createdAt: now } satisfies EmailClaim, expectedVersion: emailClaim?.version ?? 0 }]
          : []),
        { table: T.users, id: user.id, value: approvedUser, expectedVersion: 0 },
      ],
    });
    return approvedUser;
  }

  /**
   * Deletion: the user keeps its id (memberships and records name it) with status deleted; its
   * names go, and its email and identities are released, so the same person signing in again is
   * a new user. Its sessions end with it.
   */
  async deleteUser(id: string): Promise<UserRecord> {
    const current = await this.store.get<UserRecord>(T.users, id);
    if (!current) throw notFound("user", id);
    const u = current.value;
    const now = Date.now();
    const links = await this.identitiesOf(u);
    const next: UserRecord = { ...u, status: "deleted", firstName: "", lastName: "", issuers: [], sessionsValidAfter: now, updatedAt: now };
    delete (next as { pictureUrl?: string }).pictureUrl;
    const emailClaim = u.email ? await this.store.get<EmailClaim>(T.userEmails, u.email) : undefined;
    await this.store.commit({
      writes: [
        { table: T.users, id, value: next, expectedVersion: current.version },
        ...(emailClaim?.value.userId === id ? [{ table: T.userEmails, id: u.email, value: null }] : []),
        ...links.map((key) => ({ table: T.userIdentities, id: key, value: null })),
      ],
    });
    return next;
  }

  /** An (issuer, subject) link, kept in its user's partition so deletion finds them all. */
  private linkWrite(userId: string, claims: IdentityClaims, now: number, expectedVersion: number): RecordWrite {
    const id = identityKey(claims.issuer, claims.subject);
    return {
      table: T.userIdentities,
      id,
      value: { userId, createdAt: now } satisfies IdentityLink,
      partition: userId,
      sort: sortKey(now, id),
      expectedVersion,
    };
  }

  private async identitiesOf(u: UserRecord): Promise<string[]> {
    const links = await this.store.scan<IdentityLink>(T.userIdentities, u.id, { limit: 1000 });
    return links.items.map((l) => l.id);
  }

  changeUser(id: string, fn: (u: UserRecord) => UserRecord): Promise<UserRecord> {
    return this.change<UserRecord>(T.users, id, "user", (u) => ({ ...fn(u), updatedAt: Date.now() }));
  }

  // ── memberships ──

  private membershipWrites(m: MembershipRecord): RecordWrite[] {
    return [
      { table: T.memberships, id: membershipId(m.organizationId, m.userId), value: m, partition: m.organizationId, sort: sortKey(m.createdAt, m.id) },
      {
        table: T.userMemberships,
        id: membershipId(m.userId, m.organizationId),
        value: { organizationId: m.organizationId, isActive: m.isActive },
        partition: m.userId,
        sort: sortKey(m.createdAt, m.id),
      },
    ];
  }

  async membership(organizationId: string, userId: string): Promise<MembershipRecord | undefined> {
    const m = (await this.store.get<MembershipRecord>(T.memberships, membershipId(organizationId, userId)))?.value;
    return m?.isActive ? m : undefined;
  }

  async userOrganizations(userId: string): Promise<{ org: OrganizationRecord; membership: MembershipRecord }[]> {
    const links = await this.store.scan<UserMembershipLink>(T.userMemberships, userId, { limit: 10_000, filter: (l) => l.isActive });
    const out: { org: OrganizationRecord; membership: MembershipRecord }[] = [];
    for (const link of links.items) {
      const org = await this.organization(link.value.organizationId);
      // The membership decides: changeMembership writes the link after it, so a link can lag.
      const membership = await this.membership(link.value.organizationId, userId);
      if (org && membership) out.push({ org, membership });
    }
    return out;
  }

  async addMember(organizationId: string, user: UserRecord, role: Role): Promise<MembershipRecord> {
    const existing = (await this.store.get<MembershipRecord>(T.memberships, membershipId(organizationId, user.id)))?.value;
    if (existing?.isActive) throw alreadyExists(`${user.email} is already a member`, "email");
    const now = Date.now();
    const m: MembershipRecord = existing
      ? { ...existing, role, isActive: true, updatedAt: now }
      : { id: newId(Prefix.membership), organizationId, userId: user.id, role, isActive: true, createdAt: now, updatedAt: now };
    await this.store.commit({ writes: this.membershipWrites(m) });
    return m;
  }

  async changeMembership(organizationId: string, userId: string, fn: (m: MembershipRecord) => MembershipRecord): Promise<MembershipRecord> {
    const id = membershipId(organizationId, userId);
    const current = await this.store.get<MembershipRecord>(T.memberships, id);
    if (!current?.value.isActive) throw notFound("member", userId);
    const next = { ...fn(current.value), updatedAt: Date.now() };
    if (current.value.role === "owner" && (next.role !== "owner" || !next.isActive)) {
      const owners = await this.store.scan<MembershipRecord>(T.memberships, organizationId, { limit: 2, filter: (m) => m.isActive && m.role === "owner" });
      if (owners.total < 2) throw apiError(Code.FailedPrecondition, "an organization keeps at least one owner");
    }
    try {
      const [row, link] = this.membershipWrites(next);
      await this.store.commit({ writes: [{ ...row!, expectedVersion: current.version }, link!] });
    } catch (e) {
      if (e instanceof VersionConflict) throw apiError(Code.Aborted, "the membership changed concurrently; retry");
      throw e;
    }
    return next;
  }
}
