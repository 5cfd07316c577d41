// One job: its status and each output's progress as JobService/Watch streams them (no polling), the
// estimate and Confirm while it awaits confirmation, Cancel while it runs, the itemized cost once
// it settles, and what went wrong.
import { useEffect, useRef, useState } from "preact/hooks";
import { Code, ConnectError } from "@connectrpc/connect";
import { CostLineType, JobStatus, type CostBreakdownLine, type Job } from "../../../src/gen/media/v1/job_pb.js";
import { api, problemOf } from "../api.js";
import type { PageProps } from "../workspace.js";
import { bytes, describeInput, describeOutput, JOB_STATUS, jobStatusData, money, OUTPUT_STATUS, outputStatusData, TERMINAL, when } from "./jobs-shared.js";

const LINE: Record<CostLineType, string> = {
  [CostLineType.UNSPECIFIED]: "",
  [CostLineType.OUTPUT]: "output",
  [CostLineType.MINIMUM_CHARGE]: "minimum charge",
  [CostLineType.FEE]: "fee",
  [CostLineType.ADJUSTMENT]: "adjustment",
};

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

export function JobPage({ id }: PageProps & { id: string }) {
  const [job, setJob] = useState<Job | undefined>();
  const [problem, setProblem] = useState("");
  const [live, setLive] = useState(false);
  const [busy, setBusy] = useState(false);
  const latest = useRef<Job | undefined>();

  const show = (j: Job) => {
    latest.current = j;
    setJob(j);
  };

  useEffect(() => {
    const stop = new AbortController();
    void (async () => {
      // Watch sends the snapshot first, then each change, then the terminal status, then ends. A
      // stream cut short (a restart, a network blip) is opened again and starts with a fresh snapshot.
      let failures = 0;
      while (!stop.signal.aborted) {
        try {
          setLive(true);
          for await (const message of api.jobs.watch({ id }, { signal: stop.signal })) {
            failures = 0;
            if (message.job) show(message.job);
          }
        } catch (e) {
          if (stop.signal.aborted) return;
          const code = ConnectError.from(e).code;
          if (code === Code.NotFound || code === Code.InvalidArgument || code === Code.PermissionDenied || code === Code.Unauthenticated) {
            setProblem(problemOf(e).message);
            setLive(false);
            return;
          }
          failures++;
        } finally {
          setLive(false);
        }
        if (latest.current && TERMINAL.has(latest.current.status)) return;
        await pause(Math.min(30_000, 1000 * 2 ** failures), stop.signal);
      }
    })();
    return () => stop.abort();
  }, [id]);

  const act = async (what: "confirm" | "cancel") => {
    if (what === "cancel" && !confirm(`Cancel job ${id}? Outputs already completed are kept; the rest stop.`)) return;
    setBusy(true);
    setProblem("");
    try {
      const r = what === "confirm" ? await api.jobs.confirm({ id }) : await api.jobs.cancel({ id });
      if (r.job) show(r.job);
    } catch (e) {
      setProblem(problemOf(e).message);
    } finally {
      setBusy(false);
    }
  };

  if (!job) {
    return (
      <>
        <p>
          <a href="#/jobs">← Jobs</a>
        </p>
        <h1>Job {id}</h1>
        {problem ? <p role="alert">{problem}</p> : <p class="muted">Loading the job…</p>}
      </>
    );
  }

  const terminal = TERMINAL.has(job.status);
  const awaiting = job.status === JobStatus.AWAITING_CONFIRMATION;
  const lines = job.costBreakdown?.lines ?? [];
  return (
    <>
      <p>
        <a href="#/jobs">← Jobs</a>
      </p>
      <h1>
        Job <code>{job.id}</code>
      </h1>
      <div class="toolbar">
        <span>
          Status{" "}
          <strong role="status" class="status" data-status={jobStatusData(job.status)}>
            {JOB_STATUS[job.status]}
          </strong>
          {!terminal && ` · ${job.progress}%`}
        </span>
        {!terminal && <span class="muted">{live ? "Updates as it changes." : "Reconnecting…"}</span>}
        <span class="spacer" />
        {awaiting && (
          <button type="button" disabled={busy} onClick={() => void act("confirm")}>
            Confirm and start encoding
          </button>
        )}
        {!terminal && (
          <button type="button" class="danger" disabled={busy} onClick={() => void act("cancel")}>
            Cancel job
          </button>
        )}
      </div>
      {problem && <p role="alert">{problem}</p>}
      {job.errorCode && (
        <div class="card" role="alert">
          <p>
            <strong>The job failed:</strong> {job.errorMessage || job.errorCode} (<code>{job.errorCode}</code>)
          </p>
        </div>
      )}
      {awaiting && (
        <section class="card" aria-labelledby="estimate">
          <h2 id="estimate">Estimate</h2>
          <p>
            The input is probed; nothing is encoded until you confirm. Estimated cost: <strong data-estimate>{money(job.totalEstimatedCost)}</strong>
          </p>
          <CostTable lines={lines} actual={false} total={job.totalEstimatedCost} />
        </section>
      )}
      <section class="card" aria-labelledby="facts">
        <h2 id="facts">Details</h2>
        <dl class="facts">
          <dt>Input</dt>
          <dd>
            {job.inputVideoId ? (
              <>
                video <a href={`#/videos/${job.inputVideoId}`}>{job.inputVideoId}</a>
              </>
            ) : (
              describeInput(job)
            )}
          </dd>
          <dt>Destination</dt>
          <dd>
            {job.videoId ? (
              <>
                managed hosting, video <a href={`#/videos/${job.videoId}`}>{job.videoId}</a>
              </>
            ) : job.outputOrigin ? (
              `${job.outputOrigin.name || job.outputOrigin.id}${job.outputOrigin.path ? `: ${job.outputOrigin.path}` : ""}`
            ) : (
              "—"
            )}
          </dd>
          {job.inputMetadata && (
            <>
              <dt>Input file</dt>
              <dd>
                {[
                  job.inputMetadata.video && `${job.inputMetadata.video.codec} ${job.inputMetadata.video.width}×${job.inputMetadata.video.height}`,
                  job.inputMetadata.audio && `${job.inputMetadata.audio.codec} audio`,
                  `${(Number(job.inputMetadata.durationMs) / 1000).toFixed(1)} s`,
                  bytes(job.inputMetadata.sizeBytes),
                ]
                  .filter(Boolean)
                  .join(" · ")}
              </dd>
            </>
          )}
          <dt>Created</dt>
          <dd>{when(job.createdAt)}</dd>
          {job.completedAt && (
            <>
              <dt>Finished</dt>
              <dd>{when(job.completedAt)}</dd>
            </>
          )}
        </dl>
      </section>
      <section class="card" aria-labelledby="outputs">
        <h2 id="outputs">Outputs</h2>
        {job.outputs.length === 0 ? (
          <p class="empty">The outputs are listed once the input is probed.</p>
        ) : (
          <table>
            <caption class="visually-hidden">Outputs of the job and their progress</caption>
            <thead>
              <tr>
                <th scope="col">Output</th>
                <th scope="col">Status</th>
                <th scope="col">Progress</th>
                <th scope="col">Size</th>
              </tr>
            </thead>
            <tbody>
              {job.outputs.map((o) => (
                <tr key={o.id} data-output={o.id}>
                  <td>
                    {describeOutput(o.spec)}
                    <br />
                    <code class="muted">{o.id}</code>
                  </td>
                  <td>
                    <span class="status" data-status={outputStatusData(o.status)}>
                      {OUTPUT_STATUS[o.status]}
                    </span>
                  </td>
                  <td>
                    <progress max={100} value={o.progress} aria-label={`Progress of ${o.id}`} /> {o.progress}%
                  </td>
                  <td>
                    {o.errorCode ? <span class="field-error">{o.errorMessage || o.errorCode}</span> : o.outputSizeBytes > 0n ? bytes(o.outputSizeBytes) : "—"}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {job.outputs.some((o) => o.outputUrl) && (
          <>
            <h3>Where the outputs are</h3>
            <dl class="facts">
              {job.outputs
                .filter((o) => o.outputUrl)
                .map((o) => (
                  <>
                    <dt>
                      <code>{o.id}</code>
                    </dt>
                    <dd>
                      <code>{o.outputUrl}</code>
                    </dd>
                  </>
                ))}
            </dl>
          </>
        )}
      </section>
      {terminal && (
        <section class="card" aria-labelledby="cost">
          <h2 id="cost">Cost</h2>
          {job.totalActualCost === undefined ? (
            <p class="muted">No cost was settled for this job.</p>
          ) : (
            <CostTable lines={lines} actual total={job.totalActualCost} />
          )}
        </section>
      )}
    </>
  );
}

function CostTable({ lines, actual, total }: { lines: readonly CostBreakdownLine[]; actual: boolean; total: number | undefined }) {
  return (
    <table data-cost={actual ? "actual" : "estimate"}>
      <caption class="visually-hidden">{actual ? "Itemized cost" : "Itemized estimate"}</caption>
      <thead>
        <tr>
          <th scope="col">Item</th>
          <th scope="col">Kind</th>
          {actual && <th scope="col">Estimated</th>}
          <th scope="col">{actual ? "Charged" : "Estimated"}</th>
        </tr>
      </thead>
      <tbody>
        {lines.map((l, i) => (
          <tr key={`${l.referenceId}-${i}`}>
            <td>{l.description || l.referenceId}</td>
            <td>{LINE[l.type]}</td>
            {actual && <td>{money(l.estimatedAmountEur)}</td>}
            <td>{money(actual ? l.actualAmountEur : l.estimatedAmountEur)}</td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th scope="row" colSpan={actual ? 3 : 2}>
            Total
          </th>
          <td>
            <strong>{money(total)}</strong>
          </td>
        </tr>
      </tfoot>
    </table>
  );
}
