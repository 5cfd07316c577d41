// Usage: what completed jobs actually cost, per UTC day and per app, summed in the browser from
// JobService/List (every page, through its cursor) and each job's total_actual_cost.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import { JobStatus, type Job } from "../../../src/gen/media/v1/job_pb.js";
import { api, problemOf } from "../api.js";
import type { PageProps } from "../workspace.js";

/** At most this many pages of 100 jobs are read; beyond, the page says the sums are partial. */
const MAX_PAGES = 200;

interface Row {
  readonly key: string;
  readonly label: string;
  readonly jobs: number;
  readonly cost: number;
}

interface Summary {
  readonly currency: string;
  readonly byDay: readonly Row[];
  readonly byApp: readonly Row[];
  readonly total: number;
  readonly jobs: number;
  readonly scanned: number;
  readonly partial: boolean;
}

type State = { kind: "loading"; scanned: number } | { kind: "problem"; message: string } | { kind: "ready"; summary: Summary };

/** The UTC day a job's cost counts on: when it completed (else when it was last updated). */
function dayOf(job: Job): string {
  const at = job.completedAt ?? job.updatedAt ?? job.createdAt;
  return at ? timestampDate(at).toISOString().slice(0, 10) : "unknown";
}

function add(map: Map<string, { jobs: number; cost: number }>, key: string, cost: number) {
  const row = map.get(key) ?? { jobs: 0, cost: 0 };
  map.set(key, { jobs: row.jobs + 1, cost: row.cost + cost });
}

async function summarize(onProgress: (scanned: number) => void): Promise<Summary> {
  const jobs: Job[] = [];
  let cursor = "";
  let partial = false;
  for (let page = 0; ; page++) {
    if (page === MAX_PAGES) {
      partial = true;
      break;
    }
    const r = await api.jobs.list({ status: JobStatus.COMPLETED, pagination: { limit: 100, cursor } });
    jobs.push(...r.jobs);
    onProgress(jobs.length);
    cursor = r.pagination?.nextCursor ?? "";
    if (!cursor) break;
  }
  const apps = new Map<string, string>();
  try {
    const r = await api.apps.list({ includeArchived: true, pagination: { limit: 100 } });
    for (const a of r.apps) apps.set(a.id, a.name);
  } catch {
    // Without app names the ids are shown.
  }
  const byDay = new Map<string, { jobs: number; cost: number }>();
  const byApp = new Map<string, { jobs: number; cost: number }>();
  let total = 0;
  let counted = 0;
  let currency = "";
  for (const job of jobs) {
    if (job.status !== JobStatus.COMPLETED || job.totalActualCost === undefined) continue;
    const cost = job.totalActualCost;
    currency ||= job.currency;
    add(byDay, dayOf(job), cost);
    add(byApp, job.appId, cost);
    total += cost;
    counted++;
  }
  return {
    currency: currency || "EUR",
    byDay: [...byDay].sort(([a], [b]) => (a < b ? 1 : -1)).map(([key, v]) => ({ key, label: key, ...v })),
    byApp: [...byApp].sort(([, a], [, b]) => b.cost - a.cost).map(([key, v]) => ({ key, label: apps.get(key) ?? key, ...v })),
    total,
    jobs: counted,
    scanned: jobs.length,
    partial,
  };
}

export function UsagePage(_props: PageProps) {
  const [state, setState] = useState<State>({ kind: "loading", scanned: 0 });
  useEffect(() => {
    void summarize((scanned) => setState({ kind: "loading", scanned })).then(
      (summary) => setState({ kind: "ready", summary }),
      (e: unknown) => setState({ kind: "problem", message: problemOf(e).message }),
    );
  }, []);

  return (
    <>
      <h1>Usage</h1>
      <p class="muted">What completed jobs actually cost, by the UTC day they completed and by app. Jobs still running, failed or canceled are not counted.</p>
      {state.kind === "loading" && (
        <p class="loading" role="status">
          Reading jobs… {state.scanned > 0 && `${state.scanned} so far`}
        </p>
      )}
      {state.kind === "problem" && <p role="alert">{state.message}</p>}
      {state.kind === "ready" && <Report summary={state.summary} />}
    </>
  );
}

function Report({ summary }: { summary: Summary }) {
  const money = new Intl.NumberFormat(undefined, { style: "currency", currency: summary.currency, minimumFractionDigits: 2, maximumFractionDigits: 4 });
  if (summary.jobs === 0) {
    return <p class="empty">No completed job yet: costs appear here once a job completes.</p>;
  }
  return (
    <>
      <dl class="facts card">
        <dt>Total</dt>
        <dd data-total>{money.format(summary.total)}</dd>
        <dt>Completed jobs</dt>
        <dd>{summary.jobs}</dd>
      </dl>
      {summary.partial && (
        <p role="alert">
          Only the newest {summary.scanned} completed jobs were read ({MAX_PAGES} pages); older costs are not in these sums.
        </p>
      )}
      <CostTable title="Cost per day (UTC)" first="Day" rows={summary.byDay} format={money.format} />
      <CostTable title="Cost per app" first="App" rows={summary.byApp} format={money.format} />
    </>
  );
}

function CostTable({ title, first, rows, format }: { title: string; first: string; rows: readonly Row[]; format: (n: number) => string }) {
  const max = Math.max(...rows.map((r) => r.cost), 0);
  return (
    <>
      <h2>{title}</h2>
      <table>
        <caption class="visually-hidden">{title}</caption>
        <thead>
          <tr>
            <th scope="col">{first}</th>
            <th scope="col">Jobs</th>
            <th scope="col">Cost</th>
            <th scope="col">
              <span class="visually-hidden">Share of the largest</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <th scope="row">{r.label}</th>
              <td>{r.jobs}</td>
              <td>{format(r.cost)}</td>
              <td style={{ width: "40%" }}>
                {/* Set through the style object (CSSOM), which the console's CSP allows. */}
                <span
                  aria-hidden="true"
                  style={{
                    display: "block",
                    minWidth: "2px",
                    height: "0.75rem",
                    borderRadius: "3px",
                    background: "var(--accent)",
                    width: `${max > 0 ? Math.round((r.cost / max) * 100) : 0}%`,
                  }}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
