// The organization: its name (admins edit it), its apps with their hosting settings (admins edit
// them, create apps, enable hosting), its members and their roles (admins add by email, change,
// remove), and sign-up approvals (operator staff only).
import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import type { App } from "../../../src/gen/media/v1/app_pb.js";
import type { Organization } from "../../../src/gen/media/v1/organization_pb.js";
import { ApprovalStatus, Role, type Membership } from "../../../src/gen/media/v1/user_pb.js";
import { api, problemOf, type Problem } from "../api.js";
import type { PageProps } from "../workspace.js";

const ROLES = [Role.OWNER, Role.ADMIN, Role.MEMBER, Role.VIEWER] as const;
const roleName = (r: Role) => Role[r].toLowerCase();
const MAX_RETENTION_DAYS = 3650;

/** Every page of a cursor-paged list (the console's lists are small; 50 pages of 100 at most). */
async function everything<T>(page: (cursor: string) => Promise<{ items: T[]; next: string }>): Promise<T[]> {
  const all: T[] = [];
  let cursor = "";
  for (let i = 0; i < 50; i++) {
    const { items, next } = await page(cursor);
    all.push(...items);
    if (!next) break;
    cursor = next;
  }
  return all;
}

/** A field's server error beside it: the input's props and the message element. */
function fieldError(problem: Problem | undefined, field: string, id: string) {
  const message = problem?.fields[field];
  return {
    input: { "aria-invalid": message ? ("true" as const) : undefined, "aria-describedby": message ? id : undefined },
    message: message ? (
      <span id={id} class="field-error">
        {message}
      </span>
    ) : null,
  };
}

/** The problem's message, unless every field it names is shown beside its field. */
function Alert({ problem, fields }: { problem: Problem | undefined; fields: readonly string[] }) {
  if (!problem) return null;
  const named = Object.keys(problem.fields);
  if (named.length > 0 && named.every((f) => fields.includes(f))) return null;
  return <p role="alert">{problem.message}</p>;
}

export function OrganizationPage({ workspace }: PageProps) {
  const isAdmin = workspace.role === "owner" || workspace.role === "admin";
  const [org, setOrg] = useState<Organization | undefined>();
  const [apps, setApps] = useState<App[]>([]);
  const [members, setMembers] = useState<Membership[]>([]);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [memberEmail, setMemberEmail] = useState("");

  const loadOrg = async () => setOrg((await api.organizations.get({ id: workspace.organizationId })).organization);
  const loadApps = async () =>
    setApps(
      await everything(async (cursor) => {
        const r = await api.apps.list({ pagination: { limit: 100, cursor } });
        return { items: r.apps, next: r.pagination?.nextCursor ?? "" };
      }),
    );
  const loadMembers = async () =>
    setMembers(
      await everything(async (cursor) => {
        const r = await api.users.listMembers({ pagination: { limit: 100, cursor } });
        return { items: r.members, next: r.pagination?.nextCursor ?? "" };
      }),
    );
  useEffect(() => {
    void Promise.all([loadOrg(), loadApps(), loadMembers()]).catch((e: unknown) => setProblem(problemOf(e)));
  }, []);

  return (
    <>
      <h1>Organization</h1>
      {problem && <p role="alert">{problem.message}</p>}
      <OrganizationCard org={org} isAdmin={isAdmin} role={workspace.role} onSaved={setOrg} />

      <h2>Apps</h2>
      {apps.length === 0 && <p class="empty">No active app: create one below.</p>}
      {apps.map((app) => (
        <AppCard key={app.id} app={app} isAdmin={isAdmin} current={app.id === workspace.appId} onSaved={() => void loadApps()} />
      ))}
      {isAdmin && <CreateApp onCreated={() => void loadApps()} />}

      <h2>Members</h2>
      <MembersTable members={members} isAdmin={isAdmin} selfId={workspace.userId} selfRole={workspace.role} onChanged={() => void loadMembers()} />
      {isAdmin && <AddMember email={memberEmail} setEmail={setMemberEmail} canOwn={workspace.role === "owner"} onAdded={() => void loadMembers()} />}

      <h2>Sign-up approvals</h2>
      <Approvals onApproved={(email) => setMemberEmail(email)} />
    </>
  );
}

function OrganizationCard({
  org,
  isAdmin,
  role,
  onSaved,
}: {
  org: Organization | undefined;
  isAdmin: boolean;
  role: string;
  onSaved: (o: Organization) => void;
}) {
  const [name, setName] = useState("");
  const [problem, setProblem] = useState<Problem | undefined>();
  const [saved, setSaved] = useState(false);
  useEffect(() => setName(org?.name ?? ""), [org?.name]);
  if (!org) return <p class="loading">Loading the organization…</p>;

  const save = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setSaved(false);
    try {
      const updated = (await api.organizations.update({ id: org.id, name })).organization;
      if (updated) onSaved(updated);
      setSaved(true);
    } catch (err) {
      setProblem(problemOf(err));
    }
  };
  const nameError = fieldError(problem, "name", "org-name-error");
  return (
    <section class="card" aria-label="Organization details">
      <dl class="facts">
        <dt>Name</dt>
        <dd>{org.name}</dd>
        <dt>Slug</dt>
        <dd>
          <code>{org.slug}</code>
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{org.id}</code>
        </dd>
        {org.billingEmail && (
          <>
            <dt>Billing email</dt>
            <dd>{org.billingEmail}</dd>
          </>
        )}
        <dt>Your role</dt>
        <dd>{role}</dd>
      </dl>
      {isAdmin ? (
        <form class="inline" onSubmit={save}>
          <label>
            Organization name
            <input value={name} required maxLength={255} onInput={(e) => setName(e.currentTarget.value)} {...nameError.input} />
          </label>
          <button type="submit">Rename</button>
          {nameError.message}
          {saved && <span role="status"> Saved.</span>}
        </form>
      ) : (
        <p class="muted">Only owners and admins can rename the organization.</p>
      )}
      <Alert problem={problem} fields={["name"]} />
    </section>
  );
}

const HOSTING_FIELDS = ["hosting.cdn_hostname", "hosting.player_base_url", "hosting.delete_source_after_days"];

function AppCard({ app, isAdmin, current, onSaved }: { app: App; isAdmin: boolean; current: boolean; onSaved: () => void }) {
  const h = app.hosting;
  const [cdn, setCdn] = useState(h?.cdnHostname ?? "");
  const [player, setPlayer] = useState(h?.playerBaseUrl ?? "");
  const [retention, setRetention] = useState(String(h?.deleteSourceAfterDays ?? 0));
  const [problem, setProblem] = useState<Problem | undefined>();
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    setCdn(h?.cdnHostname ?? "");
    setPlayer(h?.playerBaseUrl ?? "");
    setRetention(String(h?.deleteSourceAfterDays ?? 0));
  }, [h?.cdnHostname, h?.playerBaseUrl, h?.deleteSourceAfterDays]);

  const act = async (what: () => Promise<unknown>) => {
    setProblem(undefined);
    setSaved(false);
    try {
      await what();
      setSaved(true);
      onSaved();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };
  const saveHosting = (e: Event) => {
    e.preventDefault();
    const days = Number(retention.trim());
    if (retention.trim() === "" || !Number.isInteger(days)) {
      setSaved(false);
      setProblem({ message: "Invalid retention", fields: { "hosting.delete_source_after_days": "must be a whole number of days" }, signedOut: false });
      return;
    }
    // Out-of-range numbers go to the server, whose field error is shown beside the field.
    void act(() =>
      api.apps.update({
        id: app.id,
        hosting: { cdnHostname: cdn.trim(), playerBaseUrl: player.trim(), deleteSourceAfterDays: Math.max(-2147483648, Math.min(2147483647, days)) },
      }),
    );
  };
  const id = (s: string) => `${app.id}-${s}`;
  const cdnError = fieldError(problem, "hosting.cdn_hostname", id("cdn-error"));
  const playerError = fieldError(problem, "hosting.player_base_url", id("player-error"));
  const retentionError = fieldError(problem, "hosting.delete_source_after_days", id("retention-error"));
  const days = h?.deleteSourceAfterDays ?? 0;

  return (
    <section class="card" aria-labelledby={id("title")} data-app={app.id}>
      <h3 id={id("title")}>
        {app.name} {current && <span class="muted">(this console's app)</span>}
      </h3>
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{app.id}</code>
        </dd>
        {app.description && (
          <>
            <dt>Description</dt>
            <dd>{app.description}</dd>
          </>
        )}
        <dt>Hosting</dt>
        <dd>{app.hostingEnabled ? "enabled" : "not enabled"}</dd>
        {h && (
          <>
            <dt>CDN host</dt>
            <dd>{h.cdnHostname || <span class="muted">the public URL's host</span>}</dd>
            <dt>Player base URL</dt>
            <dd>{h.playerBaseUrl || <span class="muted">the public URL</span>}</dd>
            <dt>Source retention</dt>
            <dd data-retention>{days === 0 ? "sources are kept" : `sources deleted after ${days} day${days === 1 ? "" : "s"}`}</dd>
            <dt>Signing key</dt>
            <dd>
              <code>…{h.signingKeyHint}</code>
            </dd>
            <dt>Default ladder</dt>
            <dd>{h.defaultLadder.map((r) => `${r}p`).join(", ") || "—"}</dd>
          </>
        )}
      </dl>
      {isAdmin && h && (
        <form class="stack" onSubmit={saveHosting} aria-label={`Hosting settings of ${app.name}`}>
          <label>
            CDN host (empty: the public URL's host)
            <input value={cdn} onInput={(e) => setCdn(e.currentTarget.value)} {...cdnError.input} />
            {cdnError.message}
          </label>
          <label>
            Player base URL (empty: the public URL)
            <input value={player} onInput={(e) => setPlayer(e.currentTarget.value)} {...playerError.input} />
            {playerError.message}
          </label>
          <label>
            Delete sources after (days, 0 keeps them)
            <input inputMode="numeric" value={retention} onInput={(e) => setRetention(e.currentTarget.value)} {...retentionError.input} />
            {retentionError.message}
          </label>
          <span class="muted">
            0 to {MAX_RETENTION_DAYS} days. A new value applies to videos uploaded from now on; deletions already scheduled are cleared.
          </span>
          <div class="toolbar">
            <button type="submit">Save hosting settings</button>
            {saved && <span role="status">Saved.</span>}
          </div>
        </form>
      )}
      {isAdmin && !app.hostingEnabled && (
        <div class="toolbar">
          <button type="button" class="secondary" onClick={() => void act(() => api.apps.enableHosting({ id: app.id }))}>
            Enable hosting for {app.name}
          </button>
          {saved && <span role="status">Hosting enabled.</span>}
        </div>
      )}
      <Alert problem={problem} fields={HOSTING_FIELDS} />
    </section>
  );
}

function CreateApp({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [problem, setProblem] = useState<Problem | undefined>();
  const create = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    try {
      await api.apps.create({ name });
      setName("");
      onCreated();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };
  const nameError = fieldError(problem, "name", "new-app-name-error");
  return (
    <>
      <form class="inline" onSubmit={create}>
        <label>
          New app name
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} {...nameError.input} />
        </label>
        <button type="submit">Create app</button>
        {nameError.message}
      </form>
      <Alert problem={problem} fields={["name"]} />
    </>
  );
}

function MembersTable(props: { members: Membership[]; isAdmin: boolean; selfId: string; selfRole: string; onChanged: () => void }) {
  const [problem, setProblem] = useState<Problem | undefined>();
  if (props.members.length === 0) return <p class="empty">No members listed.</p>;
  return (
    <>
      <table>
        <caption class="visually-hidden">Members of the organization and their roles</caption>
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.members.map((m) => (
            <MemberRow key={m.userId} member={m} {...props} setProblem={setProblem} />
          ))}
        </tbody>
      </table>
      {problem && <p role="alert">{problem.message}</p>}
    </>
  );
}

function MemberRow({
  member,
  isAdmin,
  selfId,
  selfRole,
  onChanged,
  setProblem,
}: {
  member: Membership;
  isAdmin: boolean;
  selfId: string;
  selfRole: string;
  onChanged: () => void;
  setProblem: (p: Problem | undefined) => void;
}) {
  const [role, setRole] = useState<Role>(member.role);
  const [saved, setSaved] = useState(false);
  useEffect(() => setRole(member.role), [member.role]);
  const self = member.userId === selfId;
  // Only owners grant, change or remove the owner role.
  const manageable = isAdmin && (selfRole === "owner" || member.role !== Role.OWNER);
  const name = `${member.firstName} ${member.lastName}`.trim();

  const change = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setSaved(false);
    if (role === member.role) return;
    if (self && !confirm(`Change your own role to ${roleName(role)}? You may lose access to this page.`)) return;
    try {
      await api.users.updateRole({ userId: member.userId, role });
      setSaved(true);
      onChanged();
    } catch (err) {
      setRole(member.role);
      setProblem(problemOf(err));
    }
  };
  const remove = async () => {
    const who = self ? "yourself" : member.email;
    if (!confirm(`Remove ${who} from the organization? They lose access to its apps at once.`)) return;
    setProblem(undefined);
    try {
      await api.users.removeMember({ userId: member.userId });
      onChanged();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  return (
    <tr data-member={member.email}>
      <td>
        {member.email}
        {self && <span class="muted"> (you)</span>}
      </td>
      <td>{name || <span class="muted">—</span>}</td>
      <td>
        {manageable ? (
          <form class="inline" onSubmit={change}>
            <select aria-label={`Role of ${member.email}`} value={role} onChange={(e) => setRole(Number(e.currentTarget.value) as Role)}>
              {ROLES.filter((r) => selfRole === "owner" || r !== Role.OWNER).map((r) => (
                <option value={r}>{roleName(r)}</option>
              ))}
            </select>{" "}
            <button type="submit" class="secondary" disabled={role === member.role} aria-label={`Save the role of ${member.email}`}>
              Save
            </button>
            {saved && <span role="status"> Saved.</span>}
          </form>
        ) : (
          <span data-role>{roleName(member.role)}</span>
        )}
      </td>
      <td>
        {manageable && (
          <button type="button" class="danger" onClick={() => void remove()} aria-label={`Remove ${member.email}`}>
            Remove
          </button>
        )}
      </td>
    </tr>
  );
}

function AddMember({ email, setEmail, canOwn, onAdded }: { email: string; setEmail: (s: string) => void; canOwn: boolean; onAdded: () => void }) {
  const [role, setRole] = useState<Role>(Role.MEMBER);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [added, setAdded] = useState("");
  const add = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setAdded("");
    if (role === Role.OWNER && !confirm(`Make ${email} an owner? Owners can remove every other member.`)) return;
    try {
      const m = (await api.users.addMember({ email: email.trim(), role })).member;
      setAdded(`${m?.email ?? email} added as ${roleName(role)}.`);
      setEmail("");
      onAdded();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };
  const emailError = fieldError(problem, "email", "add-member-email-error");
  const roleError = fieldError(problem, "role", "add-member-role-error");
  return (
    <section class="card" aria-labelledby="add-member-title">
      <h3 id="add-member-title">Add a member</h3>
      <p class="muted">The person must have signed in once and been approved.</p>
      <form class="stack" onSubmit={add}>
        <label>
          Member email
          <input type="email" autoComplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} {...emailError.input} />
          {emailError.message}
        </label>
        <label>
          Member role
          <select value={role} onChange={(e) => setRole(Number(e.currentTarget.value) as Role)} {...roleError.input}>
            {ROLES.filter((r) => canOwn || r !== Role.OWNER).map((r) => (
              <option value={r}>{roleName(r)}</option>
            ))}
          </select>
          {roleError.message}
        </label>
        <div class="toolbar">
          <button type="submit">Add member</button>
          {added && <span role="status">{added}</span>}
        </div>
      </form>
      <Alert problem={problem} fields={["email", "role"]} />
    </section>
  );
}

/**
 * Whether the caller is operator staff. No call says so directly; DecideApproval with no user is
 * refused before validation for everyone else (permission denied), and only fails validation for
 * staff, so the probe changes nothing.
 */
async function isStaff(): Promise<boolean> {
  try {
    await api.users.decideApproval({ userId: "", decision: ApprovalStatus.UNSPECIFIED });
    return true;
  } catch (e) {
    return ConnectError.from(e).code === Code.InvalidArgument;
  }
}

function Approvals({ onApproved }: { onApproved: (email: string) => void }) {
  const [staff, setStaff] = useState<boolean | undefined>();
  const [userId, setUserId] = useState("");
  const [problem, setProblem] = useState<Problem | undefined>();
  const [decided, setDecided] = useState("");
  useEffect(() => {
    void isStaff().then(setStaff);
  }, []);

  if (staff === undefined) return <p class="loading">Checking whether you approve sign-ups…</p>;
  if (!staff) {
    return (
      <p class="muted">
        New sign-ups stay pending until operator staff approve them (MEDIA_STAFF_EMAILS; the bootstrap owner by default). You are not staff, so there is nothing
        to decide here; once someone is approved, an admin adds them under Members.
      </p>
    );
  }

  const decide = async (decision: ApprovalStatus) => {
    setProblem(undefined);
    setDecided("");
    const id = userId.trim();
    if (decision === ApprovalStatus.REJECTED && !confirm(`Reject the sign-up ${id}? They cannot use the service until approved later.`)) return;
    try {
      const user = (await api.users.decideApproval({ userId: id, decision })).user;
      const email = user?.email ?? id;
      setDecided(`${email} is now ${decision === ApprovalStatus.APPROVED ? "approved" : "rejected"}.`);
      setUserId("");
      if (decision === ApprovalStatus.APPROVED && user) onApproved(user.email);
    } catch (err) {
      setProblem(problemOf(err));
    }
  };
  const idError = fieldError(problem, "user_id", "approval-user-error");
  return (
    <section class="card" aria-labelledby="approvals-title">
      <h3 id="approvals-title">Approve or reject a sign-up</h3>
      <p class="muted">
        A new user is pending until you decide. The API does not list pending sign-ups: ask the person for the user id their Account page shows (usr_…).
      </p>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void decide(ApprovalStatus.APPROVED);
        }}
      >
        <label>
          Pending user id
          <input value={userId} autoComplete="off" placeholder="usr_…" onInput={(e) => setUserId(e.currentTarget.value)} {...idError.input} />
          {idError.message}
        </label>
        <div class="toolbar">
          <button type="submit">Approve</button>
          <button type="button" class="danger" onClick={() => void decide(ApprovalStatus.REJECTED)}>
            Reject
          </button>
          {decided && <span role="status">{decided}</span>}
        </div>
      </form>
      <Alert problem={problem} fields={["user_id"]} />
    </section>
  );
}
