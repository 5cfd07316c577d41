// Jobs: the list (a status filter, a page at a time through the API's cursor), one job (#/jobs/<id>,
// jobs-detail.tsx) and the form that creates one (#/jobs/new, jobs-new.tsx).
import { useEffect, useRef, useState } from "preact/hooks";
import { JobStatus, type Job } from "../../../src/gen/media/v1/job_pb.js";
import { api, problemOf } from "../api.js";
import type { PageProps } from "../workspace.js";
import { JobPage } from "./jobs-detail.js";
import { NewJobPage } from "./jobs-new.js";
import { describeInput, describeOutput, JOB_STATUS, jobStatusData, when } from "./jobs-shared.js";

const PAGE = 25;
const FILTERS: readonly JobStatus[] = [
  JobStatus.PENDING,
  JobStatus.PROBING,
  JobStatus.AWAITING_CONFIRMATION,
  JobStatus.PROCESSING,
  JobStatus.COMPLETED,
  JobStatus.FAILED,
  JobStatus.CANCELED,
  JobStatus.PARTIAL,
];

export function JobsPage(props: PageProps) {
  if (props.rest === "new") return <NewJobPage {...props} />;
  if (props.rest) return <JobPage {...props} id={decodeURIComponent(props.rest)} />;
  return <JobList />;
}

function JobList() {
  const [status, setStatus] = useState(JobStatus.UNSPECIFIED);
  const [jobs, setJobs] = useState<Job[] | undefined>();
  const [next, setNext] = useState("");
  const [problem, setProblem] = useState("");
  const [loading, setLoading] = useState(false);
  /** The filter shown: a page that arrives after the filter changed is dropped. */
  const shown = useRef(status);
  shown.current = status;

  const loadPage = async (filter: JobStatus, cursor: string) => {
    setLoading(true);
    setProblem("");
    try {
      const page = await api.jobs.list({ status: filter, pagination: { limit: PAGE, cursor } });
      if (filter !== shown.current) return;
      setJobs((list) => (cursor ? [...(list ?? []), ...page.jobs] : page.jobs));
      setNext(page.pagination?.nextCursor ?? "");
    } catch (e) {
      setProblem(problemOf(e).message);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    void loadPage(status, "");
  }, [status]);

  return (
    <>
      <h1>Jobs</h1>
      <div class="toolbar">
        <a class="button" href="#/jobs/new">
          New job
        </a>
        <label>
          Status{" "}
          <select
            value={String(status)}
            onChange={(e) => {
              setJobs(undefined);
              setStatus(Number(e.currentTarget.value) as JobStatus);
            }}
          >
            <option value={String(JobStatus.UNSPECIFIED)}>Any status</option>
            {FILTERS.map((s) => (
              <option value={String(s)}>{JOB_STATUS[s]}</option>
            ))}
          </select>
        </label>
      </div>
      {problem && <p role="alert">{problem}</p>}
      {jobs === undefined ? (
        !problem && <p class="muted">Loading jobs…</p>
      ) : jobs.length === 0 ? (
        <p class="empty">
          {status === JobStatus.UNSPECIFIED ? (
            <>
              No jobs yet: <a href="#/jobs/new">create a job</a> to transcode a hosted video or a file at a URL or in an origin.
            </>
          ) : (
            <>No {JOB_STATUS[status]} jobs: choose another status above, or any status.</>
          )}
        </p>
      ) : (
        <table>
          <caption class="visually-hidden">Jobs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Status</th>
              <th scope="col">Input</th>
              <th scope="col">Outputs</th>
              <th scope="col">Progress</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td>
                  <a href={`#/jobs/${j.id}`}>
                    <code>{j.id}</code>
                  </a>
                </td>
                <td>
                  <span class="status" data-status={jobStatusData(j.status)}>
                    {JOB_STATUS[j.status]}
                  </span>
                </td>
                <td>{describeInput(j)}</td>
                <td>{j.outputs.length ? j.outputs.map((o) => describeOutput(o.spec)).join("; ") : "—"}</td>
                <td>{j.progress}%</td>
                <td>{when(j.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <div class="toolbar">
          <button type="button" class="secondary" disabled={loading} onClick={() => void loadPage(status, next)}>
            Load more
          </button>
        </div>
      )}
    </>
  );
}
