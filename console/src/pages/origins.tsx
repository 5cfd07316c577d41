// Origins: the storage locations jobs read from and write to, a page at a time through the API's
// cursor; a new origin (Amazon S3, S3-compatible such as R2 or MinIO, Google Cloud Storage, or a
// read-only HTTPS server) whose credentials the server checks before storing it; one origin's
// settings, Validate with its result, replacing credentials, and archive. Credentials are sent,
// never shown back: the API does not return them and the form forgets them once sent.
import { useEffect, useState } from "preact/hooks";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { OriginPermission, OriginProvider, OriginStatus, type Origin, type ValidationResult } from "../../../src/gen/media/v1/origin_pb.js";
import { api, problemOf, type Problem } from "../api.js";
import type { PageProps } from "../workspace.js";
import { Field } from "../ui.js";

const PAGE = 20;
type Kind = "s3" | "r2" | "gcs" | "http";
const KINDS: [Kind, string][] = [
  ["s3", "Amazon S3"],
  ["r2", "S3-compatible (Cloudflare R2, MinIO, …)"],
  ["gcs", "Google Cloud Storage"],
  ["http", "HTTPS server (read only)"],
];
const KIND_OF: Record<OriginProvider, Kind | undefined> = {
  [OriginProvider.UNSPECIFIED]: undefined,
  [OriginProvider.S3]: "s3",
  [OriginProvider.R2]: "r2",
  [OriginProvider.GCS]: "gcs",
  [OriginProvider.HTTP]: "http",
};
const STATUS: Record<OriginStatus, string> = {
  [OriginStatus.UNSPECIFIED]: "unknown",
  [OriginStatus.ACTIVE]: "active",
  [OriginStatus.FAILED]: "failed",
  [OriginStatus.ARCHIVED]: "archived",
};

const kindLabel = (p: OriginProvider) => KINDS.find(([k]) => k === KIND_OF[p])?.[1] ?? "unknown";
const when = (t: Timestamp | undefined) => (t ? timestampDate(t).toLocaleString() : "never");
const permissions = (o: Origin) => o.permissions.map((p) => (p === OriginPermission.READ ? "read" : p === OriginPermission.WRITE ? "write" : "?")).join(", ");
const location_ = (o: Origin) =>
  o.baseUrl || [o.bucket, o.region, o.endpoint].filter(Boolean).join(" · ") + (o.basePath ? ` /${o.basePath.replace(/^\//, "")}` : "");

/** "Name: value" lines into a header map. */
const headersOf = (text: string) =>
  Object.fromEntries(
    text
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .map((l) => {
        const i = l.indexOf(":");
        return i < 0 ? [l, ""] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
      }),
  );

/** The validation a create just returned, for the origin's page it goes to. */
let handedOver: { id: string; result: ValidationResult } | undefined;

export function OriginsPage({ workspace, rest }: PageProps) {
  if (rest === "") return <OriginList appId={workspace.appId} />;
  if (rest === "new") return <NewOrigin appId={workspace.appId} />;
  return <OriginDetail id={decodeURIComponent(rest)} />;
}

function Validation({ result, name }: { result: ValidationResult; name: string }) {
  return (
    <div class="card" role="status" aria-label={`Validation of ${name}`}>
      <h2>Validation {result.success ? "passed" : "failed"}</h2>
      <dl class="facts">
        <dt>Read</dt>
        <dd>{result.canRead ? "allowed" : result.readError || "not allowed"}</dd>
        <dt>Write</dt>
        <dd>{result.canWrite ? "allowed" : result.writeError || "not declared or not allowed"}</dd>
        <dt>Checked</dt>
        <dd>{when(result.validatedAt)}</dd>
      </dl>
    </div>
  );
}

function OriginList({ appId }: { appId: string }) {
  const [origins, setOrigins] = useState<Origin[]>([]);
  const [next, setNext] = useState("");
  const [total, setTotal] = useState<number | undefined>();
  const [archived, setArchived] = useState(false);
  const [loaded, setLoaded] = useState(false);
  const [problem, setProblem] = useState("");
  const [status, setStatus] = useState("");

  const page = async (cursor: string, includeArchived = archived) => {
    const r = await api.origins.list({ appId, includeArchived, pagination: { limit: PAGE, cursor } });
    setOrigins((list) => (cursor ? [...list, ...r.origins] : r.origins));
    setNext(r.pagination?.nextCursor ?? "");
    setTotal(r.pagination?.totalCount === undefined ? undefined : Number(r.pagination.totalCount));
    setLoaded(true);
  };
  const run = (p: Promise<unknown>) => void p.catch((e: unknown) => setProblem(problemOf(e).message));
  useEffect(() => run(page("")), []);

  const replace = (o: Origin | undefined) => o && setOrigins((list) => list.map((x) => (x.id === o.id ? o : x)));
  const validate = async (o: Origin) => {
    setStatus(`Validating ${o.name}…`);
    const r = await api.origins.validate({ id: o.id });
    replace(r.origin);
    const v = r.validation;
    setStatus(`${o.name}: validation ${v?.success ? "passed" : `failed. ${[v?.readError, v?.writeError].filter(Boolean).join(" ")}`}`);
  };
  const archive = async (o: Origin) => {
    if (!confirm(`Archive the origin "${o.name}"? New jobs can no longer use it.`)) return;
    const r = await api.origins.archive({ id: o.id });
    if (archived) replace(r.origin);
    else setOrigins((list) => list.filter((x) => x.id !== o.id));
    setStatus(`${o.name} is archived.`);
  };

  return (
    <>
      <h1>Origins</h1>
      <p class="muted">Origins are your storage buckets and servers: jobs read their inputs from them and write their outputs to them.</p>
      <div class="toolbar">
        <a class="button" href="#/origins/new">
          New origin
        </a>
        <label>
          <input
            type="checkbox"
            checked={archived}
            onChange={(e) => {
              setArchived(e.currentTarget.checked);
              run(page("", e.currentTarget.checked));
            }}
          />
          Show archived origins
        </label>
      </div>
      {problem && <p role="alert">{problem}</p>}
      <p role="status" class="muted">
        {status}
      </p>
      {loaded && origins.length === 0 ? (
        <p class="empty">No origins yet: choose New origin and give a bucket (S3, R2, GCS) or an HTTPS address with credentials that can read it.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Origins of this app</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Location</th>
              <th scope="col">Permissions</th>
              <th scope="col">Status</th>
              <th scope="col">Last validated</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {origins.map((o) => (
              <tr key={o.id}>
                <td>
                  <a href={`#/origins/${o.id}`}>{o.name}</a>
                </td>
                <td>{kindLabel(o.provider)}</td>
                <td>{location_(o)}</td>
                <td>{permissions(o)}</td>
                <td>
                  {STATUS[o.status]}
                  {o.validationError && <span class="muted"> ({o.validationError})</span>}
                </td>
                <td>{when(o.lastValidatedAt)}</td>
                <td>
                  {o.status !== OriginStatus.ARCHIVED && (
                    <span class="toolbar">
                      <button type="button" class="secondary" aria-label={`Validate ${o.name}`} onClick={() => run(validate(o))}>
                        Validate
                      </button>
                      <button type="button" class="danger" aria-label={`Archive ${o.name}`} onClick={() => run(archive(o))}>
                        Archive
                      </button>
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <div class="toolbar">
          <button type="button" class="secondary" onClick={() => run(page(next))}>
            Show more origins
          </button>
          {total !== undefined && (
            <span class="muted">
              {origins.length} of {total} shown
            </span>
          )}
        </div>
      )}
    </>
  );
}

/** Credentials being typed: sent, then forgotten. */
interface Secrets {
  accessKeyId: string;
  secretAccessKey: string;
  serviceAccountJson: string;
  headers: string;
}
const NO_SECRETS: Secrets = { accessKeyId: "", secretAccessKey: "", serviceAccountJson: "", headers: "" };

/** The credential inputs of a kind; `at` is the field path prefix of the server's messages ("s3.credentials", "s3_credentials"). */
function CredentialFields(props: { kind: Kind; at: string; secrets: Secrets; set: (s: Secrets) => void; problem?: Problem; idPrefix: string }) {
  const { kind, at, secrets, set, problem, idPrefix } = props;
  if (kind === "gcs")
    return (
      <Field id={`${idPrefix}-sa`} label="Service account key (JSON)" field={[`${at}.service_account_json`, at]} problem={problem}>
        {(a) => (
          <textarea
            {...a}
            rows={4}
            autoComplete="off"
            spellcheck={false}
            value={secrets.serviceAccountJson}
            onInput={(e) => set({ ...secrets, serviceAccountJson: e.currentTarget.value })}
          />
        )}
      </Field>
    );
  if (kind === "http")
    return (
      <Field
        id={`${idPrefix}-headers`}
        label="Request headers (optional)"
        hint="One per line, as Name: value; up to 20. Sent with every request to the server."
        field={[`${at}.headers`, at]}
        problem={problem}
      >
        {(a) => (
          <textarea
            {...a}
            rows={3}
            autoComplete="off"
            spellcheck={false}
            value={secrets.headers}
            onInput={(e) => set({ ...secrets, headers: e.currentTarget.value })}
          />
        )}
      </Field>
    );
  return (
    <>
      <Field id={`${idPrefix}-key-id`} label="Access key ID" field={[`${at}.access_key_id`, at]} problem={problem}>
        {(a) => <input {...a} autoComplete="off" value={secrets.accessKeyId} onInput={(e) => set({ ...secrets, accessKeyId: e.currentTarget.value })} />}
      </Field>
      <Field id={`${idPrefix}-secret`} label="Secret access key" field={`${at}.secret_access_key`} problem={problem}>
        {(a) => (
          <input
            {...a}
            type="password"
            autoComplete="new-password"
            value={secrets.secretAccessKey}
            onInput={(e) => set({ ...secrets, secretAccessKey: e.currentTarget.value })}
          />
        )}
      </Field>
    </>
  );
}

const credentials = (kind: Kind, s: Secrets) =>
  kind === "gcs"
    ? { serviceAccountJson: s.serviceAccountJson }
    : kind === "http"
      ? { headers: headersOf(s.headers) }
      : { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey };

function NewOrigin({ appId }: { appId: string }) {
  const [kind, setKind] = useState<Kind>("s3");
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [read, setRead] = useState(true);
  const [write, setWrite] = useState(true);
  const [bucket, setBucket] = useState("");
  const [region, setRegion] = useState("");
  const [endpoint, setEndpoint] = useState("");
  const [accountId, setAccountId] = useState("");
  const [baseUrl, setBaseUrl] = useState("");
  const [basePath, setBasePath] = useState("");
  const [pathTemplate, setPathTemplate] = useState("");
  const [secrets, setSecrets] = useState<Secrets>(NO_SECRETS);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    setBusy(true);
    const creds = credentials(kind, secrets);
    const config =
      kind === "s3"
        ? { s3: { bucket, region, credentials: creds } }
        : kind === "r2"
          ? { r2: { bucket, endpoint, accountId, credentials: creds } }
          : kind === "gcs"
            ? { gcs: { bucket, credentials: creds } }
            : { http: { baseUrl, credentials: creds } };
    try {
      const r = await api.origins.create({
        appId,
        name,
        description,
        basePath,
        pathTemplate,
        permissions: [...(read ? [OriginPermission.READ] : []), ...(write && kind !== "http" ? [OriginPermission.WRITE] : [])],
        ...config,
      });
      setSecrets(NO_SECRETS);
      if (r.origin) {
        if (r.validation) handedOver = { id: r.origin.id, result: r.validation };
        location.hash = `#/origins/${r.origin.id}`;
      }
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };

  const permissionError = problem && Object.entries(problem.fields).find(([k]) => k.startsWith("permissions"))?.[1];
  const f = (field: string | string[]) => ({ problem, field });
  return (
    <>
      <h1>New origin</h1>
      <div class="toolbar">
        <a href="#/origins">All origins</a>
      </div>
      <p class="muted">The credentials are checked against the bucket for every permission you declare before the origin is saved.</p>
      {problem && (
        <p role="alert">
          The origin was not saved{problem.fields[`${kind}.credentials`] ? ": the credential check failed" : ""}. {problem.message}
        </p>
      )}
      <form class="stack" onSubmit={(e) => void submit(e)} aria-label="New origin">
        <fieldset disabled={busy} class="stack">
          <legend>General</legend>
          <Field id="origin-kind" label="Kind" {...f(["provider", kind])}>
            {(a) => (
              <select {...a} value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
                {KINDS.map(([k, l]) => (
                  <option value={k}>{l}</option>
                ))}
              </select>
            )}
          </Field>
          <Field id="origin-name" label="Name" {...f("name")}>
            {(a) => <input {...a} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
          </Field>
          <Field id="origin-description" label="Description (optional)" {...f("description")}>
            {(a) => <textarea {...a} rows={2} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}
          </Field>
          <fieldset aria-describedby={permissionError ? "origin-permissions-error" : undefined}>
            <legend>Permissions</legend>
            <label>
              <input type="checkbox" checked={read} onChange={(e) => setRead(e.currentTarget.checked)} /> Read (job inputs)
            </label>
            <label>
              <input type="checkbox" checked={write && kind !== "http"} disabled={kind === "http"} onChange={(e) => setWrite(e.currentTarget.checked)} /> Write
              (job outputs){kind === "http" && " — not possible for an HTTPS server"}
            </label>
            {permissionError && (
              <span id="origin-permissions-error" class="field-error">
                {permissionError}
              </span>
            )}
          </fieldset>
        </fieldset>
        <fieldset disabled={busy} class="stack">
          <legend>Location</legend>
          {kind === "http" ? (
            <Field id="origin-base-url" label="Base URL" hint="An https:// address; inputs are read below it." {...f("http.base_url")}>
              {(a) => <input {...a} type="url" value={baseUrl} onInput={(e) => setBaseUrl(e.currentTarget.value)} />}
            </Field>
          ) : (
            <Field id="origin-bucket" label="Bucket" {...f(`${kind}.bucket`)}>
              {(a) => <input {...a} value={bucket} onInput={(e) => setBucket(e.currentTarget.value)} />}
            </Field>
          )}
          {kind === "s3" && (
            <Field id="origin-region" label="Region" hint="For example us-east-1 or eu-central-1." {...f("s3.region")}>
              {(a) => <input {...a} value={region} onInput={(e) => setRegion(e.currentTarget.value)} />}
            </Field>
          )}
          {kind === "r2" && (
            <>
              <Field
                id="origin-endpoint"
                label="Endpoint"
                hint="The S3 API address, e.g. https://minio.example.com; or leave it empty and give an R2 account ID."
                {...f("r2.endpoint")}
              >
                {(a) => <input {...a} type="url" value={endpoint} onInput={(e) => setEndpoint(e.currentTarget.value)} />}
              </Field>
              <Field id="origin-account" label="Cloudflare account ID" hint="32 hexadecimal characters; only without an endpoint." {...f("r2.account_id")}>
                {(a) => <input {...a} value={accountId} onInput={(e) => setAccountId(e.currentTarget.value)} />}
              </Field>
            </>
          )}
          {kind !== "http" && (
            <>
              <Field id="origin-base-path" label="Base path (optional)" hint="A folder inside the bucket." {...f("base_path")}>
                {(a) => <input {...a} value={basePath} onInput={(e) => setBasePath(e.currentTarget.value)} />}
              </Field>
              <Field
                id="origin-path-template"
                label="Output path template (optional)"
                hint="Variables {date}, {job_id}, {output_id}, {codec}, {resolution}."
                {...f("path_template")}
              >
                {(a) => <input {...a} value={pathTemplate} onInput={(e) => setPathTemplate(e.currentTarget.value)} />}
              </Field>
            </>
          )}
        </fieldset>
        <fieldset disabled={busy} class="stack">
          <legend>Credentials</legend>
          <p class="muted">Stored encrypted and never shown again.</p>
          <CredentialFields kind={kind} at={`${kind}.credentials`} secrets={secrets} set={setSecrets} problem={problem} idPrefix="origin" />
        </fieldset>
        <div class="toolbar">
          <button type="submit" disabled={busy}>
            {busy ? "Checking the credentials…" : "Create origin"}
          </button>
        </div>
      </form>
    </>
  );
}

function OriginDetail({ id }: { id: string }) {
  const [origin, setOrigin] = useState<Origin | undefined>();
  const [validation, setValidation] = useState<ValidationResult | undefined>(handedOver?.id === id ? handedOver.result : undefined);
  const [edit, setEdit] = useState({ name: "", description: "", basePath: "", pathTemplate: "" });
  const [secrets, setSecrets] = useState<Secrets>(NO_SECRETS);
  const [problem, setProblem] = useState<Problem | undefined>();
  const [saved, setSaved] = useState("");
  const [busy, setBusy] = useState(false);

  const show = (o: Origin | undefined) => {
    if (!o) return;
    setOrigin(o);
    setEdit({ name: o.name, description: o.description, basePath: o.basePath, pathTemplate: o.pathTemplate });
  };
  useEffect(() => {
    handedOver = undefined;
    void api.origins.get({ id }).then(
      (r) => show(r.origin),
      (e: unknown) => setProblem(problemOf(e)),
    );
  }, [id]);

  const kind = origin ? KIND_OF[origin.provider] : undefined;
  const archived = origin?.status === OriginStatus.ARCHIVED;

  const validate = async () => {
    setBusy(true);
    setProblem(undefined);
    try {
      const r = await api.origins.validate({ id });
      show(r.origin);
      setValidation(r.validation);
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };

  const save = async (e: Event) => {
    e.preventDefault();
    if (!origin || !kind) return;
    setBusy(true);
    setProblem(undefined);
    setSaved("");
    const typed =
      kind === "gcs" ? !!secrets.serviceAccountJson : kind === "http" ? !!secrets.headers.trim() : !!(secrets.accessKeyId || secrets.secretAccessKey);
    try {
      const r = await api.origins.update({
        id,
        name: edit.name,
        description: edit.description,
        basePath: edit.basePath,
        pathTemplate: edit.pathTemplate,
        ...(typed ? { [`${kind}Credentials`]: credentials(kind, secrets) } : {}),
      });
      setSecrets(NO_SECRETS);
      show(r.origin);
      if (r.validation) setValidation(r.validation);
      setSaved(`Saved at ${new Date().toLocaleTimeString()}${r.validation ? "; the new credentials were checked" : ""}.`);
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };

  const archive = async () => {
    if (!origin || !confirm(`Archive the origin "${origin.name}"? New jobs can no longer use it.`)) return;
    try {
      await api.origins.archive({ id });
      location.hash = "#/origins";
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  if (!origin)
    return (
      <>
        <h1>Origin</h1>
        <div class="toolbar">
          <a href="#/origins">All origins</a>
        </div>
        {problem ? <p role="alert">{problem.message}</p> : <p class="loading">Loading the origin…</p>}
      </>
    );

  const f = (field: string | string[]) => ({ problem, field });
  return (
    <>
      <h1>{origin.name}</h1>
      <div class="toolbar">
        <a href="#/origins">All origins</a>
        {!archived && (
          <>
            <button type="button" class="secondary" disabled={busy} onClick={() => void validate()}>
              Validate
            </button>
            <button type="button" class="danger" onClick={() => void archive()}>
              Archive origin
            </button>
          </>
        )}
      </div>
      <dl class="facts card">
        <dt>ID</dt>
        <dd>
          <code>{origin.id}</code>
        </dd>
        <dt>Kind</dt>
        <dd>{kindLabel(origin.provider)}</dd>
        {origin.bucket && (
          <>
            <dt>Bucket</dt>
            <dd>{origin.bucket}</dd>
          </>
        )}
        {origin.region && (
          <>
            <dt>Region</dt>
            <dd>{origin.region}</dd>
          </>
        )}
        {origin.endpoint && (
          <>
            <dt>Endpoint</dt>
            <dd>{origin.endpoint}</dd>
          </>
        )}
        {origin.baseUrl && (
          <>
            <dt>Base URL</dt>
            <dd>{origin.baseUrl}</dd>
          </>
        )}
        <dt>Permissions</dt>
        <dd>{permissions(origin)}</dd>
        <dt>Status</dt>
        <dd>{STATUS[origin.status]}</dd>
        <dt>Last validated</dt>
        <dd>{when(origin.lastValidatedAt)}</dd>
        {origin.validationError && (
          <>
            <dt>Last error</dt>
            <dd>{origin.validationError}</dd>
          </>
        )}
        <dt>Credentials</dt>
        <dd class="muted">stored encrypted; never shown</dd>
      </dl>
      {validation && <Validation result={validation} name={origin.name} />}
      {problem && <p role="alert">Not saved: {problem.message}</p>}
      {saved && <p role="status">{saved}</p>}
      {!archived && kind && (
        <form class="stack" onSubmit={(e) => void save(e)} aria-label="Origin settings">
          <h2>Settings</h2>
          <fieldset disabled={busy} class="stack">
            <legend>General</legend>
            <Field id="edit-name" label="Name" {...f("name")}>
              {(a) => <input {...a} value={edit.name} onInput={(e) => setEdit({ ...edit, name: e.currentTarget.value })} />}
            </Field>
            <Field id="edit-description" label="Description" {...f("description")}>
              {(a) => <textarea {...a} rows={2} value={edit.description} onInput={(e) => setEdit({ ...edit, description: e.currentTarget.value })} />}
            </Field>
            {kind !== "http" && (
              <>
                <Field id="edit-base-path" label="Base path" {...f("base_path")}>
                  {(a) => <input {...a} value={edit.basePath} onInput={(e) => setEdit({ ...edit, basePath: e.currentTarget.value })} />}
                </Field>
                <Field
                  id="edit-path-template"
                  label="Output path template"
                  hint="Variables {date}, {job_id}, {output_id}, {codec}, {resolution}."
                  {...f("path_template")}
                >
                  {(a) => <input {...a} value={edit.pathTemplate} onInput={(e) => setEdit({ ...edit, pathTemplate: e.currentTarget.value })} />}
                </Field>
              </>
            )}
          </fieldset>
          <fieldset disabled={busy} class="stack">
            <legend>Replace credentials (optional)</legend>
            <p class="muted">Leave empty to keep the stored ones. New credentials are checked when saved.</p>
            <CredentialFields kind={kind} at={`${kind}_credentials`} secrets={secrets} set={setSecrets} problem={problem} idPrefix="edit" />
          </fieldset>
          <div class="toolbar">
            <button type="submit" disabled={busy}>
              Save origin
            </button>
          </div>
        </form>
      )}
    </>
  );
}
