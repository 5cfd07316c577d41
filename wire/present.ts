// Records to wire messages: the one place where stored shapes become API resources.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { ApiKeyRecord } from "../actors/api-key/messages.js";
import type { AppRecord, MembershipRecord, OrganizationRecord, Role as RoleName, UserRecord } from "../src/directory.js";
import { ApiKeySchema, type ApiKey } from "../src/gen/media/v1/api_key_pb.js";
import { AppSchema, AppStatus, type App } from "../src/gen/media/v1/app_pb.js";
import { OrganizationSchema, OrganizationStatus, type Organization } from "../src/gen/media/v1/organization_pb.js";
import { ApprovalStatus, MembershipSchema, Role, UserSchema, UserStatus, type Membership, type User } from "../src/gen/media/v1/user_pb.js";

export const ts = (ms: number | undefined): Timestamp | undefined => (ms === undefined ? undefined : timestampFromMs(ms));

export function organizationMessage(o: OrganizationRecord): Organization {
  return create(OrganizationSchema, {
    id: o.id,
    name: o.name,
    slug: o.slug,
    billingEmail: o.billingEmail,
    status: o.status === "active" ? OrganizationStatus.ACTIVE : OrganizationStatus.SUSPENDED,
    createdAt: ts(o.createdAt),
    updatedAt: ts(o.updatedAt),
  });
}

/** An app as the API shows it. Hosting settings as stored: "" means the deployment's public URL. */
export function appMessage(a: AppRecord): App {
  return create(AppSchema, {
    id: a.id,
    organizationId: a.organizationId,
    name: a.name,
    description: a.description,
    status: a.status === "active" ? AppStatus.ACTIVE : AppStatus.ARCHIVED,
    hostingEnabled: a.hostingEnabledAt !== undefined,
    hostingEnabledAt: ts(a.hostingEnabledAt),
    hosting: a.hosting && {
      cdnHostname: a.hosting.cdnHostname,
      playerBaseUrl: a.hosting.playerBaseUrl,
      deleteSourceAfterDays: a.hosting.deleteSourceAfterDays,
      signingKeyHint: a.hosting.key.hint,
      signingKeyCreatedAt: ts(a.hosting.key.createdAt),
      previousSigningKeyExpiresAt: a.hosting.previous && a.hosting.previous.expiresAt > Date.now() ? ts(a.hosting.previous.expiresAt) : undefined,
      defaultLadder: [...a.hosting.ladder],
    },
    webhook: a.webhook && {
      url: a.webhook.url,
      events: [...a.webhook.events],
      hasSecret: a.webhook.sealedSecret !== undefined,
      secretHint: a.webhook.secretHint,
    },
    createdAt: ts(a.createdAt),
    updatedAt: ts(a.updatedAt),
    archivedAt: ts(a.archivedAt),
  });
}

export function apiKeyMessage(k: ApiKeyRecord): ApiKey {
  return create(ApiKeySchema, {
    id: k.id,
    appId: k.appId,
    name: k.name,
    description: k.description,
    keyPrefix: k.keyPrefix,
    keyHint: k.keyHint,
    scopes: [...k.scopes],
    lastUsedAt: ts(k.lastUsedAt),
    expiresAt: ts(k.expiresAt),
    createdAt: ts(k.createdAt),
    isRevoked: k.revokedAt !== undefined,
    revokedAt: ts(k.revokedAt),
  });
}

const USER_STATUS = { active: UserStatus.ACTIVE, suspended: UserStatus.SUSPENDED, deleted: UserStatus.DELETED } as const;
const APPROVAL = { pending: ApprovalStatus.PENDING, approved: ApprovalStatus.APPROVED, rejected: ApprovalStatus.REJECTED } as const;
export const ROLE_TO_WIRE: Record<RoleName, Role> = { owner: Role.OWNER, admin: Role.ADMIN, member: Role.MEMBER, viewer: Role.VIEWER };
export const ROLE_FROM_WIRE: Partial<Record<Role, RoleName>> = {
  [Role.OWNER]: "owner",
  [Role.ADMIN]: "admin",
  [Role.MEMBER]: "member",
  [Role.VIEWER]: "viewer",
};

export function userMessage(u: UserRecord): User {
  const decided = u.approvalStatus !== "pending";
  return create(UserSchema, {
    id: u.id,
    email: u.email,
    emailVerified: u.emailVerified,
    firstName: u.firstName,
    lastName: u.lastName,
    profilePictureUrl: u.pictureUrl,
    status: USER_STATUS[u.status],
    lastLoginAt: ts(u.lastLoginAt),
    createdAt: ts(u.createdAt),
    updatedAt: ts(u.updatedAt),
    approvalStatus: APPROVAL[u.approvalStatus],
    approvalDecidedAt: decided ? ts(u.approvalDecidedAt) : undefined,
    approvalDecidedByUserId: decided ? u.approvalDecidedBy : undefined,
  });
}

export function membershipMessage(m: MembershipRecord, u: UserRecord | undefined): Membership {
  return create(MembershipSchema, {
    id: m.id,
    organizationId: m.organizationId,
    userId: m.userId,
    email: u?.email ?? "",
    firstName: u?.firstName ?? "",
    lastName: u?.lastName ?? "",
    role: ROLE_TO_WIRE[m.role],
    isActive: m.isActive,
    createdAt: ts(m.createdAt),
    updatedAt: ts(m.updatedAt),
  });
}
