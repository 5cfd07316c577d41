// Which job changes are ledger events (output.ready, output.failed, job.succeeded, job.failed,
// job.partial, job.canceled), in the ledger's envelope (actors/ledger.ts).
import { API_VERSION, derivedId, type EventRecord, type EventType } from "../ledger.js";
import type { JobEvent, JobRecord } from "./messages.js";

const OUTCOME: Partial<Record<JobRecord["status"], EventType>> = {
  completed: "job.succeeded",
  failed: "job.failed",
  partial: "job.partial",
  canceled: "job.canceled",
};

/** The ledger events a job event produces, given the job after it. */
export function jobLedgerEvents(job: JobRecord, event: JobEvent): EventRecord[] {
  const base = { appId: job.appId, organizationId: job.organizationId, requestId: job.requestId ?? "", apiVersion: API_VERSION };
  const make = (type: EventType, at: number, outputId?: string): EventRecord => ({
    ...base,
    id: derivedId("evt_", `${job.id}:${type}:${outputId ?? ""}`),
    type,
    subject: { kind: "job", job, ...(outputId ? { outputId } : {}) },
    createdAt: at,
  });
  switch (event.type) {
    case "output_completed":
      return [make("output.ready", event.at, event.outputId)];
    case "output_failed":
      return [make("output.failed", event.at, event.outputId)];
    case "settled": {
      const type = OUTCOME[event.status];
      return type ? [make(type, event.at)] : [];
    }
    default:
      return [];
  }
}
