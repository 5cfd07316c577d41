// UserService: the signed-in user's profile, users and memberships of the organization, and the
// operator staff's approval and suspension decisions.
import type { ServiceImpl } from "@connectrpc/connect";
import { failedPrecondition, notFound, permissionDenied } from "../../src/errors.js";
import { atLeast, T, type MembershipRecord, type Role as RoleName } from "../../src/directory.js";
import { ApprovalStatus, Role, UserStatus, type UserService } from "../../src/gen/media/v1/user_pb.js";
import { Prefix } from "../../src/ids.js";
import { Check, LIMITS } from "../../src/validation.js";
import { callerOf, type Caller } from "../access.js";
import { membershipMessage, ROLE_FROM_WIRE, ROLE_TO_WIRE, userMessage } from "../../wire/present.js";
import type { ServiceDeps } from "./deps.js";

function sessionOnly(caller: Caller) {
  if (caller.kind !== "session") throw permissionDenied("API keys have no user profile; sign in");
  return caller;
}

function roleOf(check: Check, field: string, role: Role): RoleName | undefined {
  const name = ROLE_FROM_WIRE[role];
  if (!name) check.add(field, "must be one of owner, admin, member, viewer");
  return name;
}

/** Admins manage members and admins; only owners touch owners. */
function mayManage(caller: Caller, target: RoleName): void {
  if (caller.kind === "session" && target === "owner" && !atLeast(caller.role!, "owner")) {
    throw permissionDenied("only an owner can grant, change or remove the owner role");
  }
}

export function userService(d: ServiceDeps): ServiceImpl<typeof UserService> {
  const member = async (orgId: string, userId: string): Promise<MembershipRecord> => {
    new Check().id("user_id", userId, Prefix.user).done();
    const m = await d.directory.membership(orgId, userId);
    if (!m) throw notFound("member", userId);
    return m;
  };
  return {
    async getMe(_req, ctx) {
      const { user } = sessionOnly(callerOf(ctx.values));
      const orgs = await d.directory.userOrganizations(user.id);
      return {
        user: {
          user: userMessage(user),
          organizations: orgs.map(({ org, membership }) => ({
            orgId: org.id,
            orgSlug: org.slug,
            orgName: org.name,
            role: ROLE_TO_WIRE[membership.role],
            isActive: membership.isActive,
          })),
        },
      };
    },
    async updateMe(req, ctx) {
      const { user } = sessionOnly(callerOf(ctx.values));
      new Check().length("first_name", req.firstName, 0, LIMITS.userName).length("last_name", req.lastName, 0, LIMITS.userName).done();
      const next = await d.directory.changeUser(user.id, (u) => ({
        ...u,
        ...(req.firstName !== undefined ? { firstName: req.firstName } : {}),
        ...(req.lastName !== undefined ? { lastName: req.lastName } : {}),
      }));
      return { user: userMessage(next) };
    },
    async get(req, ctx) {
      const caller = callerOf(ctx.values);
      new Check().id("id", req.id, Prefix.user).done();
      if (caller.kind === "session" && req.id !== caller.user.id) throw permissionDenied("a signed-in user may read only their own profile");
      const user = await d.directory.user(req.id);
      if (!user || (caller.kind === "key" && !(await d.directory.membership(caller.org.id, user.id)))) throw notFound("user", req.id);
      return { user: userMessage(user) };
    },
    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      const orgId = caller.org!.id;
      const status = req.status === UserStatus.UNSPECIFIED ? undefined : req.status;
      const all = await d.store.scan<MembershipRecord>(T.memberships, orgId, { limit: 100_000, filter: (m) => m.isActive });
      const users = [];
      for (const m of all.items) {
        const u = await d.directory.user(m.value.userId);
        if (u && (status === undefined || userMessage(u).status === status)) users.push({ sort: m.sort, user: u });
      }
      const page = d.paginator.pageOf(users, `users:${orgId}:${status ?? ""}`, req.pagination);
      return { users: page.items.map((i) => userMessage(i.user)), pagination: page.pagination };
    },
    async listMembers(req, ctx) {
      const orgId = callerOf(ctx.values).org!.id;
      const role = req.role === Role.UNSPECIFIED ? undefined : ROLE_FROM_WIRE[req.role];
      const page = await d.paginator.page<MembershipRecord>(
        T.memberships,
        orgId,
        `members:${orgId}:${role ?? ""}`,
        req.pagination,
        (m) => m.isActive && (role === undefined || m.role === role),
      );
      const members = [];
      for (const r of page.items) members.push(membershipMessage(r.value, await d.directory.user(r.value.userId)));
      return { members, pagination: page.pagination };
    },
    async addMember(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().required("email", req.email).email("email", req.email);
      const role = roleOf(check, "role", req.role);
      check.done();
      mayManage(caller, role!);
      const user = await d.directory.userByEmail(req.email);
      if (!user) throw notFound("user with email", req.email);
      const m = await d.directory.addMember(caller.org!.id, user, role!);
      return { member: membershipMessage(m, user) };
    },
    async updateRole(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      const role = roleOf(check, "role", req.role);
      check.done();
      const current = await member(caller.org!.id, req.userId);
      mayManage(caller, current.role);
      mayManage(caller, role!);
      const m = await d.directory.changeMembership(caller.org!.id, req.userId, (x) => ({ ...x, role: role! }));
      return { member: membershipMessage(m, await d.directory.user(req.userId)) };
    },
    async removeMember(req, ctx) {
      const caller = callerOf(ctx.values);
      const current = await member(caller.org!.id, req.userId);
      mayManage(caller, current.role);
      const m = await d.directory.changeMembership(caller.org!.id, req.userId, (x) => ({ ...x, isActive: false }));
      return { member: membershipMessage(m, await d.directory.user(req.userId)) };
    },
    async decideApproval(req, ctx) {
      const staff = sessionOnly(callerOf(ctx.values));
      const check = new Check().id("user_id", req.userId, Prefix.user);
      if (req.decision !== ApprovalStatus.APPROVED && req.decision !== ApprovalStatus.REJECTED) check.add("decision", "must be approved or rejected");
      check.done();
      if (!(await d.directory.user(req.userId))) throw notFound("user", req.userId);
      const user = await d.directory.changeUser(req.userId, (u) => ({
        ...u,
        approvalStatus: req.decision === ApprovalStatus.APPROVED ? "approved" : "rejected",
        approvalDecidedAt: Date.now(),
        approvalDecidedBy: staff.user.id,
      }));
      return { user: userMessage(user) };
    },
    async setStatus(req, ctx) {
      const staff = sessionOnly(callerOf(ctx.values));
      const check = new Check().id("user_id", req.userId, Prefix.user);
      const status = ({ [UserStatus.ACTIVE]: "active", [UserStatus.SUSPENDED]: "suspended", [UserStatus.DELETED]: "deleted" } as const)[
        req.status as 1 | 2 | 3
      ];
      if (!status) check.add("status", "must be active, suspended or deleted");
      check.done();
      if (req.userId === staff.user.id) throw failedPrecondition("staff cannot change their own status");
      const current = await d.directory.user(req.userId);
      if (!current) throw notFound("user", req.userId);
      if (current.status === "deleted" && status !== "deleted") throw failedPrecondition("a deleted user stays deleted");
      // Suspension and deletion end every session of the user at once; API keys belong to apps and stay.
      const user =
        status === "deleted"
          ? await d.directory.deleteUser(req.userId)
          : await d.directory.changeUser(req.userId, (u) => ({ ...u, status, ...(status === "suspended" ? { sessionsValidAfter: Date.now() } : {}) }));
      d.log.info({ user_id: user.id, status, by: staff.user.id }, "user status set");
      return { user: userMessage(user) };
    },
  };
}
