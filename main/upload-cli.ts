// `media upload FILE` and `media videos`: the hosting API from a terminal. An upload goes in parts
// (multipart, streamed from disk), shows a progress bar, survives an interrupt (the next run of the
// same command asks which parts are stored and sends the rest), then follows the video until it is
// ready and prints its playback and embed URLs.
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import type { Config } from "../src/config.js";

export interface Api {
  readonly url: string;
  readonly key: string;
  readonly org: string;
}

/** Where to call: MEDIA_API_URL, MEDIA_API_KEY, MEDIA_ORGANIZATION_ID, else the embedded server's bootstrap.json. */
function apiOf(config: Config, env: NodeJS.ProcessEnv): Api {
  const file = path.join(config.dataDir, "bootstrap.json");
  const boot = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { api_key: string; organization_id: string }) : undefined;
  const url = (env.MEDIA_API_URL || config.publicUrl || `http://localhost:${config.httpPort}`).replace(/\/+$/, "");
  const key = env.MEDIA_API_KEY || boot?.api_key;
  const org = env.MEDIA_ORGANIZATION_ID || boot?.organization_id;
  if (!key || !org) throw new CliError(`no credentials: set MEDIA_API_KEY and MEDIA_ORGANIZATION_ID, or run next to the server's data folder (${file})`);
  return { url, key, org };
}

/** A failure the CLI explains in one line (no stack): what happened and what to do; `code` is the API's error code when it answered one. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Any request to the server; a connection failure says where it called and how to point elsewhere. */
async function send(api: Api, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(
      `cannot reach the media server at ${api.url} (${cause?.code ?? cause?.message ?? (e as Error).message}). Is \`npx media serve\` running? ` +
        `If it listens elsewhere, set MEDIA_API_URL (or MEDIA_HTTP_PORT, the port serve was started with)`,
    );
  }
}

async function rpc(api: Api, method: string, body: unknown): Promise<any> {
  const res = await send(api, `${api.url}/media.v1.${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${api.key}`, "x-organization-id": api.org },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(`${method} answered HTTP ${res.status}, not JSON: is ${api.url} a media server?`);
  }
  if (res.status !== 200) {
    const hint = json.code === "unauthenticated" ? " (check MEDIA_API_KEY and MEDIA_ORGANIZATION_ID)" : "";
    throw new CliError(`${method}: ${json.code}: ${json.message}${hint}`, json.code);
  }
  return json;
}

/** Bytes in binary units, as `ls -h` and most tools print them. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** One progress line: the share of the file stored, and the speed of the bytes this run sent. */
function progress(stored: number, total: number, sentNow: number, startedAt: number): void {
  const width = 30;
  const fraction = total === 0 ? 1 : stored / total;
  const filled = Math.round(fraction * width);
  const rate = sentNow / Math.max(0.001, (Date.now() - startedAt) / 1000);
  const line = `[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${Math.floor(fraction * 100)}%  ${bytes(stored)} of ${bytes(total)}  ${bytes(rate)}/s`;
  process.stderr.write(process.stderr.isTTY ? `\r${line}` : `${line}\n`);
}

/** The file to upload, checked before any call: it exists and is a regular file. */
function fileToSend(file: string | undefined): { file: string; info: Stats } {
  if (file === undefined) throw new CliError("media upload: FILE is required (media upload --help shows the usage)");
  let info: Stats;
  try {
    info = statSync(file);
  } catch {
    throw new CliError(`media upload: file not found: ${file}`);
  }
  if (!info.isFile()) throw new CliError(`media upload: not a file: ${file}${info.isDirectory() ? " is a folder" : ""}; give the path of a video file`);
  if (info.size === 0) throw new CliError(`media upload: ${file} is empty`);
  return { file, info };
}

/** The state of an unfinished upload of a file, so a second run resumes it. */
interface Pending {
  readonly videoId: string;
  readonly uploadId: string;
  readonly size: number;
  readonly mtimeMs: number;
}

function pendingFile(file: string, env: NodeJS.ProcessEnv): string {
  const dir = env.MEDIA_UPLOAD_STATE_DIR || path.join(homedir(), ".cache", "media", "uploads");
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${createHash("sha256").update(path.resolve(file)).digest("hex").slice(0, 32)}.json`);
}

export interface UploadOptions {
  readonly file: string | undefined;
  readonly title?: string | undefined;
  readonly visibility?: string | undefined;
}

export async function upload(config: Config, options: UploadOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { file, info } = fileToSend(options.file);
  if (options.visibility !== undefined && !["public", "unlisted", "private"].includes(options.visibility))
    throw new CliError(`media upload: --visibility must be public, unlisted or private, not '${options.visibility}'`);
  const api = apiOf(config, env);
  const statePath = pendingFile(file, env);
  let pending = existsSync(statePath) ? (JSON.parse(readFileSync(statePath, "utf8")) as Pending) : undefined;
  if (pending && (pending.size !== info.size || pending.mtimeMs !== info.mtimeMs)) pending = undefined; // the file changed
  const partSize = Number(env.MEDIA_UPLOAD_PART_BYTES || 16 * 1024 * 1024);

  let videoId: string;
  let uploadId: string;
  let todo: { part_number: number; upload_url: string }[];
  let stored = 0;
  let partBytes: number;
  if (pending) {
    const listed = await rpc(api, "VideoService/ListUploadParts", { id: pending.videoId, upload_id: pending.uploadId });
    videoId = pending.videoId;
    uploadId = pending.uploadId;
    todo = listed.missing;
    partBytes = listed.part_size_bytes;
    stored = info.size - todo.reduce((s, p) => s + Math.min(partBytes, info.size - (p.part_number - 1) * partBytes), 0);
    process.stderr.write(`resuming ${videoId}: ${listed.stored.length} parts stored, ${todo.length} to send\n`);
  } else {
    const { title, visibility } = options;
    const created = await rpc(api, "VideoService/CreateMultipartUpload", {
      filename: path.basename(file),
      content_type: contentTypeOf(file),
      size_bytes: info.size,
      part_size_bytes: Math.max(partSize, 5 * 1024 * 1024),
      ...(title ? { title } : {}),
      ...(visibility ? { visibility } : {}),
    });
    videoId = created.video.id;
    uploadId = created.upload_id;
    todo = created.parts;
    partBytes = created.part_size_bytes;
    writeFileSync(statePath, JSON.stringify({ videoId, uploadId, size: info.size, mtimeMs: info.mtimeMs } satisfies Pending));
    process.stderr.write(`uploading ${path.basename(file)} (${bytes(info.size)}) as ${videoId} in ${Math.ceil(info.size / partBytes)} parts\n`);
  }
  process.stderr.write("Ctrl-C stops the upload; the same command resumes it\n");
  const interrupted = () => {
    process.stderr.write(`\ninterrupted; run the same command again to resume ${videoId}\n`);
    process.exit(130);
  };
  process.once("SIGINT", interrupted);

  const startedAt = Date.now();
  let sent = 0;
  let sentBytes = 0;
  const stopAfter = Number(env.MEDIA_UPLOAD_STOP_AFTER_PARTS || 0); // tests: an interrupt after N parts
  for (const part of todo) {
    const start = (part.part_number - 1) * partBytes;
    const end = Math.min(info.size, start + partBytes) - 1;
    const res = await send(api, part.upload_url, {
      method: "PUT",
      headers: { "content-length": String(end - start + 1) },
      body: createReadStream(file, { start, end }) as unknown as BodyInit,
      duplex: "half",
    } as RequestInit);
    if (res.status !== 200) throw new CliError(`part ${part.part_number}: HTTP ${res.status} ${await res.text()}; run the same command again to resume`);
    stored += end - start + 1;
    sentBytes += end - start + 1;
    progress(stored, info.size, sentBytes, startedAt);
    if (stopAfter > 0 && ++sent >= stopAfter) {
      process.stderr.write("\ninterrupted; run the same command again to resume\n");
      return 3;
    }
  }
  if (process.stderr.isTTY) process.stderr.write("\n");
  const listed = await rpc(api, "VideoService/ListUploadParts", { id: videoId, upload_id: uploadId });
  const parts = listed.stored.map((p: { part_number: number; etag: string }) => ({ part_number: p.part_number, etag: p.etag }));
  await rpc(api, "VideoService/CompleteUpload", { id: videoId, upload_id: uploadId, parts });
  rmSync(statePath, { force: true });
  process.removeListener("SIGINT", interrupted);
  process.stderr.write("uploaded; processing (Ctrl-C stops waiting; the video goes on processing)\n");
  const video = await followUntilDone(api, videoId);
  if (video.status !== "ready") {
    const why = video.error_code ? `${video.error_code}: ${video.error_message ?? ""}` : `the video is ${video.status}`;
    process.stderr.write(`${videoId} failed: ${why}\n`);
    return 1;
  }
  process.stdout.write(
    `video:    ${video.id}\nplayback: ${video.playback_url ?? "(none: no signing key)"}\nembed:    ${video.embed_url ?? "(none: private)"}\n`,
  );
  return 0;
}

/**
 * The video's job, or undefined while it does not exist yet: the video starts its job just after the
 * upload completes, and in a cluster that reaches the job's actor host a moment later.
 */
async function startedJob(api: Api, id: string): Promise<any> {
  try {
    return (await rpc(api, "JobService/Get", { id })).job;
  } catch (e) {
    if (e instanceof CliError && e.code === "not_found") return undefined;
    throw e;
  }
}

/** Polls the video until it is no longer processing, printing its job's stage and progress as they change. */
export async function followUntilDone(api: Api, id: string, pollMs = 1000): Promise<any> {
  let shown = "";
  for (;;) {
    const { video } = await rpc(api, "VideoService/Get", { id });
    if (video.status !== "processing" && video.status !== "uploading") {
      if (process.stderr.isTTY && shown !== "") process.stderr.write("\n");
      if (video.status === "ready") process.stderr.write("ready\n");
      return video;
    }
    const job = video.job_id ? await startedJob(api, video.job_id) : undefined;
    const line = job ? `${job.status} ${job.progress ?? 0}%` : video.status;
    if (line !== shown) {
      process.stderr.write(process.stderr.isTTY ? `\r${line.padEnd(24)}` : `${line}\n`);
      shown = line;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export async function videos(config: Config, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const api = apiOf(config, env);
  const { videos: list } = await rpc(api, "VideoService/List", { page_size: 50 });
  for (const v of list as any[]) {
    process.stdout.write(`${v.id}  ${v.status.padEnd(10)}  ${String((v.duration_seconds ?? 0).toFixed(1)).padStart(7)} s  ${v.title ?? ""}\n`);
  }
  return 0;
}

const TYPES: Record<string, string> = {
  ".mp4": "video/mp4",
  ".mov": "video/quicktime",
  ".mkv": "video/x-matroska",
  ".webm": "video/webm",
  ".avi": "video/x-msvideo",
  ".ts": "video/mp2t",
};
const contentTypeOf = (file: string) => TYPES[path.extname(file).toLowerCase()] ?? "application/octet-stream";
