// The media_* series of what flows through the service: the edge's answers (playback, player,
// uploads), uploads completed, encode speed and stage times, the outbox's backlog and relay lag,
// and the bus consumers' lag. Same registry as metrics.ts; label values are closed sets, declared
// here and set to 0 at start where they are few, so rate() and dashboards see a series before
// its first event.
import { Counter, Gauge, Histogram } from "prom-client";
import { metricRegisters as registers } from "./metrics.js";

// ---- Edge (gateways): playback, the player and uploads

/** What an edge request asked for: the kind of object served, from its route and file name. */
export const EDGE_KINDS = [
  "master_playlist",
  "media_playlist",
  "iframe_playlist",
  "dash_manifest",
  "segment",
  "init",
  "key",
  "license",
  "subtitle",
  "image",
  "download",
  "file",
  "player_page",
  "player_asset",
  "token_renewal",
  "upload",
  "upload_part",
] as const;
export type EdgeKind = (typeof EDGE_KINDS)[number];

/** Why the edge refused a request: the token checks by name, then the answers by their meaning. */
export const EDGE_REFUSALS = [
  "token_missing",
  "token_malformed",
  "token_expired",
  "token_signature",
  "token_outside",
  "upload_url_expired",
  "upload_url_invalid",
  "not_ready",
  "not_found",
  "not_uploading",
  "bad_request",
  "too_large",
  "range_not_satisfiable",
  "key_not_granted",
  "other",
] as const;
export type EdgeRefusal = (typeof EDGE_REFUSALS)[number];

const STATUS_CLASSES = ["2xx", "3xx", "4xx", "5xx"] as const;

const edgeRequests = new Counter({
  name: "media_edge_requests_total",
  help: "Requests answered by the edge's hosting routes, by kind of object (master_playlist, segment, upload_part, ...) and status class (2xx, 3xx, 4xx, 5xx)",
  labelNames: ["kind", "status_class"] as const,
  registers,
});
const edgeBytes = new Counter({
  name: "media_edge_response_bytes_total",
  help: "Bytes of response bodies the edge's hosting routes answered, by kind of object (as declared by Content-Length; a client that leaves early still counts)",
  labelNames: ["kind"] as const,
  registers,
});
const edgeRefusals = new Counter({
  name: "media_edge_refusals_total",
  help: "Edge requests refused with a 4xx, by reason (token_expired, token_signature, not_ready, not_found, ...)",
  labelNames: ["reason"] as const,
  registers,
});

/** Per kind, the counter children resolved once: the hot path only adds. */
interface EdgeChildren {
  readonly byStatus: readonly { inc(n?: number): void }[];
  readonly bytes: { inc(n?: number): void };
}
const edgeChildren = new Map<EdgeKind, EdgeChildren>(
  EDGE_KINDS.map((kind) => [kind, { byStatus: STATUS_CLASSES.map((c) => edgeRequests.labels(kind, c)), bytes: edgeBytes.labels(kind) }]),
);
for (const c of edgeChildren.values()) {
  for (const s of c.byStatus) s.inc(0);
  c.bytes.inc(0);
}
const refusalChildren = new Map(EDGE_REFUSALS.map((reason) => [reason, edgeRefusals.labels(reason)]));
for (const c of refusalChildren.values()) c.inc(0);

/** One answer of the edge: its kind, status and body bytes; a 4xx also names its refusal reason. */
export function recordEdgeAnswer(kind: EdgeKind, status: number, bytes: number, refusal?: EdgeRefusal): void {
  const c = edgeChildren.get(kind)!;
  const cls = status >= 500 ? 3 : status >= 400 ? 2 : status >= 300 ? 1 : 0;
  c.byStatus[cls]!.inc();
  if (bytes > 0) c.bytes.inc(bytes);
  if (cls === 2) refusalChildren.get(refusal ?? "other")!.inc();
}

// ---- Uploads (gateways)

export type UploadKind = "single" | "multipart";
export type UploadResult = "completed" | "rejected" | "abandoned";

const uploadBytes = new Counter({
  name: "media_upload_received_bytes_total",
  help: "Bytes of uploaded files stored by the edge, by upload kind (single, multipart)",
  labelNames: ["kind"] as const,
  registers,
});
const uploadParts = new Counter({
  name: "media_upload_parts_received_total",
  help: "Parts of multipart uploads stored by the edge",
  registers,
});
const uploads = new Counter({
  name: "media_uploads_total",
  help: "Uploads ended, by kind and result: completed (CompleteUpload accepted), rejected (CompleteUpload found the stored file wrong), abandoned (the video deleted while uploading)",
  labelNames: ["kind", "result"] as const,
  registers,
});
for (const kind of ["single", "multipart"] as const) {
  uploadBytes.inc({ kind }, 0);
  for (const result of ["completed", "rejected", "abandoned"] as const) uploads.inc({ kind, result }, 0);
}
uploadParts.inc(0);

/** A file (or one part of it) stored by the edge: its bytes. */
export function uploadReceived(kind: UploadKind, bytes: number): void {
  uploadBytes.inc({ kind }, bytes);
  if (kind === "multipart") uploadParts.inc();
}

/** An upload ended. */
export function uploadEnded(kind: UploadKind, result: UploadResult): void {
  uploads.inc({ kind, result });
}

// ---- Encodes (encoder nodes)

/** The stages of an encode, each timed by encoder-node/stage-timing.ts. */
export const ENCODE_STAGES = ["fetch", "probe", "analysis", "captions", "keys", "encode", "packager", "join", "vmaf", "upload", "thumbnails"] as const;
export type EncodeStage = (typeof ENCODE_STAGES)[number];

const stageSeconds = new Histogram({
  name: "media_encode_stage_seconds",
  help: "Time in each stage of an encode (fetch, probe, analysis, captions, keys, encode, packager, join, vmaf, upload, thumbnails), failed ones included",
  labelNames: ["stage"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
  registers,
});
for (const stage of ENCODE_STAGES) stageSeconds.zero({ stage });

/** One stage's wall time. */
export function observeEncodeStage(stage: EncodeStage, seconds: number): void {
  stageSeconds.observe({ stage }, seconds);
}

/** The height labels of the realtime factor: the ladder's resolution lines, and what lies past them. */
export const HEIGHT_BUCKETS = ["240", "360", "480", "720", "1080", "1440", "2160", "4320"] as const;

/** The smallest resolution line at or above `height`, give or take 1% (1088, 1080 padded to 16 lines, is 1080). */
export function heightBucket(height: number): string {
  for (const h of HEIGHT_BUCKETS) if (height <= Number(h) * 1.01) return h;
  return "4320";
}

const realtime = new Histogram({
  name: "media_encode_realtime_factor",
  help: "Media seconds encoded per wall-clock second by one encode command, once per rendition it wrote, by codec (h264, h265, vp9, av1) and output height (the resolution line at or above it)",
  labelNames: ["codec", "height"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
  registers,
});

/** The video codecs of the spec's ladders (encoder-node/renditions.ts). */
const VIDEO_CODECS = ["h264", "h265", "vp9", "av1"] as const;
for (const codec of VIDEO_CODECS) for (const height of HEIGHT_BUCKETS) realtime.zero({ codec, height });

/** A command encoded `mediaSeconds` in `wallSeconds`, writing these renditions. */
export function observeEncodeSpeed(
  renditions: readonly { readonly codec: string; readonly height: number }[],
  mediaSeconds: number,
  wallSeconds: number,
): void {
  if (!(mediaSeconds > 0 && wallSeconds > 0)) return;
  const factor = mediaSeconds / wallSeconds;
  for (const r of renditions) realtime.observe({ codec: r.codec, height: heightBucket(r.height) }, factor);
}

// ---- The outbox (actor hosts)

const relayLag = new Histogram({
  name: "media_outbox_relay_lag_seconds",
  help: "Time from the commit of an intent's journal entry to the end of its run, by entity type and intent kind (retries included; intents recovered after a crash are not timed)",
  labelNames: ["entity", "kind"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers,
});

/** An intent ran, `seconds` after its entry was committed. */
export function observeRelayLag(entity: string, kind: string, seconds: number): void {
  relayLag.observe({ entity, kind }, seconds);
}

/** Sources of the backlog gauge: each relay of the process answers what waits in it. */
const backlogs = new Set<() => number>();

new Gauge({
  name: "media_outbox_intents_waiting",
  help: "Intents journaled on this actor host and not yet run (queued, running or retrying)",
  registers,
  collect() {
    let n = 0;
    for (const waiting of backlogs) n += waiting();
    this.set(n);
  },
});

/** Counts what `waiting` answers into the backlog gauge at each scrape; call the answer to stop. */
export function registerOutboxBacklog(waiting: () => number): () => void {
  backlogs.add(waiting);
  return () => backlogs.delete(waiting);
}

// ---- Bus consumers (every role)

const consumerLag = new Gauge({
  name: "media_bus_consumer_lag_messages",
  help: "Messages behind the partitions' high watermarks, summed over this process's consumers of a topic (without the deployment prefix), as of their latest fetched batch",
  labelNames: ["topic"] as const,
  registers,
});

/** Lag by consumer and partition, summed by topic; a consumer that stops takes its partitions out. */
const lags = new Map<object, Map<number, number>>();
const lagTopics = new Map<object, string>();

function setTopicLag(topic: string): void {
  let sum = 0;
  for (const [owner, partitions] of lags) if (lagTopics.get(owner) === topic) for (const n of partitions.values()) sum += n;
  consumerLag.set({ topic }, sum);
}

/** The lag of one consumer (`owner`, any object that stands for it) of `topic`: set per partition, forget all at its stop. */
export function consumerLagOf(
  owner: object,
  topic: string,
): { set(partition: number, lag: number): void; keep(partitions: readonly number[]): void; stop(): void } {
  lags.set(owner, new Map());
  lagTopics.set(owner, topic);
  setTopicLag(topic);
  return {
    set(partition, lag) {
      lags.get(owner)?.set(partition, Math.max(0, lag));
      setTopicLag(topic);
    },
    keep(partitions) {
      const mine = lags.get(owner);
      if (!mine) return;
      for (const p of [...mine.keys()]) if (!partitions.includes(p)) mine.delete(p);
      setTopicLag(topic);
    },
    stop() {
      lags.delete(owner);
      lagTopics.delete(owner);
      setTopicLag(topic);
    },
  };
}
