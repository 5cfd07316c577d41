// OrganizationService: slugs, creation by a signed-in user (who becomes owner), reads and updates.
import type { ServiceImpl } from "@connectrpc/connect";
import { notFound, permissionDenied } from "../../src/errors.js";
import { T, type UserMembershipLink } from "../../src/directory.js";
import { OrganizationStatus, type OrganizationService } from "../../src/gen/media/v1/organization_pb.js";
import { Prefix } from "../../src/ids.js";
import { Check, LIMITS } from "../../src/validation.js";
import { callerOf, type Caller } from "../access.js";
import { organizationMessage } from "../../wire/present.js";
import type { ServiceDeps } from "./deps.js";

const SLUG = /^[a-z0-9][a-z0-9-]*[a-z0-9]$/;

function checkSlug(check: Check, slug: string): Check {
  check.required("slug", slug).length("slug", slug, LIMITS.slugMin, LIMITS.slugMax);
  if (slug !== "" && !SLUG.test(slug)) check.add("slug", "must be lowercase letters, digits and hyphens, starting and ending with a letter or digit");
  return check;
}

/** The organization id a caller addresses: the request's, which must be the one in X-Organization-ID. */
function ownOrg(caller: Caller, id: string): string {
  const orgId = caller.org!.id;
  if (id !== "" && id !== orgId) throw notFound("organization", id);
  return orgId;
}

export function organizationService(d: ServiceDeps): ServiceImpl<typeof OrganizationService> {
  return {
    async checkSlug(req) {
      checkSlug(new Check(), req.slug).done();
      return { slug: req.slug, available: !(await d.directory.slugTaken(req.slug)) };
    },
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      if (caller.kind !== "session") throw permissionDenied("a signed-in user creates organizations");
      const check = checkSlug(new Check(), req.slug);
      check.required("name", req.name).length("name", req.name, 1, LIMITS.name).email("billing_email", req.billingEmail).done();
      const org = await d.directory.createOrganization(caller.user, {
        name: req.name,
        slug: req.slug,
        ...(req.billingEmail ? { billingEmail: req.billingEmail } : {}),
      });
      return { organization: organizationMessage(org) };
    },
    async get(req, ctx) {
      const org = await d.directory.organization(ownOrg(callerOf(ctx.values), req.id));
      if (!org) throw notFound("organization", req.id);
      return { organization: organizationMessage(org) };
    },
    async update(req, ctx) {
      const id = ownOrg(callerOf(ctx.values), req.id);
      new Check().length("name", req.name, 1, LIMITS.name).email("billing_email", req.billingEmail).done();
      const org = await d.directory.updateOrganization(id, {
        ...(req.name !== undefined ? { name: req.name } : {}),
        ...(req.billingEmail !== undefined ? { billingEmail: req.billingEmail } : {}),
      });
      return { organization: organizationMessage(org) };
    },
    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      if (caller.kind === "key") {
        // Read afresh: the caller's copy may be a few seconds old (gateway/key-callers.ts).
        const org = (await d.directory.organization(caller.org.id)) ?? caller.org;
        const page = d.paginator.pageOf([{ sort: "0", org }], `orgs:key:${caller.key.id}`, req.pagination);
        return { organizations: page.items.map((i) => organizationMessage(i.org)), pagination: page.pagination };
      }
      const page = await d.paginator.page<UserMembershipLink>(T.userMemberships, caller.user.id, `orgs:${caller.user.id}`, req.pagination, (l) => l.isActive);
      const orgs = [];
      for (const link of page.items) {
        const org = await d.directory.organization(link.value.organizationId);
        if (org) orgs.push(organizationMessage(org));
      }
      return { organizations: orgs, pagination: page.pagination };
    },
    async setStatus(req, ctx) {
      const staff = callerOf(ctx.values);
      const check = new Check().id("organization_id", req.organizationId, Prefix.organization);
      if (req.status !== OrganizationStatus.ACTIVE && req.status !== OrganizationStatus.SUSPENDED) check.add("status", "must be active or suspended");
      check.done();
      if (!(await d.directory.organization(req.organizationId))) throw notFound("organization", req.organizationId);
      const status = req.status === OrganizationStatus.ACTIVE ? "active" : "suspended";
      const org = await d.directory.changeOrganization(req.organizationId, (o) => ({ ...o, status }));
      d.log.info({ organization_id: org.id, status, by: staff.kind === "session" ? staff.user.id : undefined }, "organization status set");
      return { organization: organizationMessage(org) };
    },
  };
}
