// What the shell hands every page: who is signed in, where, and the rest of the location's hash.
export interface Workspace {
  readonly email: string;
  readonly userId: string;
  readonly organizationId: string;
  readonly organizationName: string;
  /** The caller's role in the organization: owner, admin, member or viewer. */
  readonly role: string;
  readonly appId: string;
}

/** What every page gets: the workspace, and the rest of the hash after its prefix ("#/jobs/job_x" → "job_x"). */
export interface PageProps {
  readonly workspace: Workspace;
  readonly rest: string;
}
