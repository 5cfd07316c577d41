// Tenancy: which app a call acts on and which records a caller may see, one rule for every service.
// An API key acts on its own app only: a request naming any other app_id is permission_denied (the
// spec's rule for APIKeyService List, applied everywhere), whether that app exists or not. A portal
// session acts on the apps of the organization in X-Organization-ID; the access interceptor has
// already checked its membership and role. A record of another app or organization, addressed by
// its id, answers not_found exactly as a record that does not exist, so ids reveal no other tenant.
import type { AppRecord, Directory } from "../src/directory.js";
import { failedPrecondition, notFound, permissionDenied } from "../src/errors.js";
import { Prefix } from "../src/ids.js";
import { Check } from "../src/validation.js";
import type { Caller } from "./access.js";

/** What every record owned by a tenant carries. */
export interface Owned {
  readonly organizationId: string;
  readonly appId: string;
}

/** The caller may see the record: same organization, and for an API key the same app. */
export const reaches = (caller: Caller, r: Owned): boolean => r.organizationId === caller.org?.id && (caller.kind !== "key" || caller.app.id === r.appId);

/** The record if the caller may see it; otherwise not_found, as if it did not exist. */
export function visible<R extends Owned>(caller: Caller, record: R | undefined, what: string, id: string): R {
  if (!record || !reaches(caller, record)) throw notFound(what, id);
  return record;
}

/** An app addressed as a record (AppService ids, a session's app_id), under the record rule. */
export async function visibleApp(directory: Directory, caller: Caller, id: string, field = "id"): Promise<AppRecord> {
  new Check().id(field, id, Prefix.app).done();
  const app = await directory.app(id);
  if (!app || !reaches(caller, { organizationId: app.organizationId, appId: app.id })) throw notFound("app", id);
  return app;
}

/**
 * The app a request's app_id ("" when absent) names: an API key's own app always, read afresh (the
 * caller's copy may be a few seconds old: a change made at another gateway is seen here once it is
 * announced, and what a call does with its app must follow the change); undefined when a session
 * names none.
 */
export async function namedApp(directory: Directory, caller: Caller, appId: string): Promise<AppRecord | undefined> {
  if (caller.kind === "key") {
    if (appId !== "" && appId !== caller.app.id) throw permissionDenied("an API key acts only on its own app: omit app_id or pass the key's app");
    return (await directory.app(caller.app.id)) ?? caller.app;
  }
  return appId === "" ? undefined : visibleApp(directory, caller, appId, "app_id");
}

/** The app a call acts on: the named one, else the organization's first active app (undefined when it has none). */
export async function actingApp(directory: Directory, caller: Caller, appId: string): Promise<AppRecord | undefined> {
  return (await namedApp(directory, caller, appId)) ?? directory.firstActiveApp(caller.org!.id);
}

/** actingApp for a call that cannot go on without an app. */
export async function requireActingApp(directory: Directory, caller: Caller, appId: string): Promise<AppRecord> {
  const app = await actingApp(directory, caller, appId);
  if (!app) throw failedPrecondition("the organization has no active app; create one or pass app_id");
  return app;
}
