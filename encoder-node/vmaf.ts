// VMAF of an encode against its source, through the ffmpeg with Netflix's libvmaf that
// scripts/vmaf-setup.sh installs (Debian's ffmpeg, which encodes, has no libvmaf).
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { MediaError } from "./media-errors.js";

const ROOT = path.resolve(import.meta.dirname, "..");

/** Models built into libvmaf, so no model file is shipped. */
export const VMAF_MODELS = ["vmaf_v0.6.1", "vmaf_v0.6.1neg", "vmaf_4k_v0.6.1", "vmaf_4k_v0.6.1neg", "vmaf_b_v0.6.3"] as const;
export type VmafModel = (typeof VMAF_MODELS)[number];

export interface VmafRequest {
  reference: string;
  /** The part of the reference (seconds) that the distorted file was made from: a sample of the source. */
  referenceSegment?: { start: number; duration: number };
  distorted: string;
  /** Only the frames in these spans are scored (seconds from each input's first frame, after any segment): samples with a warm-up before each. */
  select?: readonly { start: number; duration: number }[];
  /** The part of the distorted file to score (seconds from its start), when it is longer than the reference scored. */
  distortedSegment?: { start: number; duration: number };
  /** The display resolution both are compared at; either is scaled there with bicubic when its size differs (Netflix's practice). */
  width: number;
  height: number;
  /** Default vmaf_v0.6.1. */
  model?: VmafModel;
  /** Score every nth frame; default 1, every frame. */
  subsample?: number;
  /** libvmaf's threads; default the cores this process may use. */
  threads?: number;
  signal?: AbortSignal;
}

export interface VmafScore {
  /** libvmaf's pooled scores over the frames scored. */
  mean: number;
  harmonicMean: number;
  min: number;
  /** Each scored frame's score, in order (every subsample-th frame). */
  frames: number[];
  /** libvmaf's version as it reports it (a commit). */
  version: string;
}

/** The scoring ffmpeg: MEDIA_VMAF_FFMPEG, else the one scripts/vmaf-setup.sh installs. Throws when it is not there. */
export function vmafBinary(env: NodeJS.ProcessEnv = process.env): string {
  const file = env["MEDIA_VMAF_FFMPEG"] || path.join(ROOT, ".cache", "vmaf", "ffmpeg");
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new MediaError("internal", `the VMAF scorer is not installed on this encoder node (no ${file}); run bash scripts/vmaf-setup.sh`);
  }
  return file;
}

const positiveInteger = (n: number) => Number.isInteger(n) && n > 0;

/** ffmpeg's arguments, run in a scratch folder that receives the log as vmaf.json. Inputs: 0 distorted, 1 reference. */
export function vmafArgs(r: VmafRequest): string[] {
  const subsample = r.subsample ?? 1;
  const threads = r.threads ?? availableParallelism();
  const model = r.model ?? "vmaf_v0.6.1";
  if (!positiveInteger(r.width) || !positiveInteger(r.height)) throw new MediaError("internal", `VMAF at ${r.width}x${r.height}: not a size`);
  if (!positiveInteger(subsample) || !positiveInteger(threads)) throw new MediaError("internal", "VMAF subsample and threads are whole numbers from 1");
  if (!VMAF_MODELS.includes(model)) throw new MediaError("internal", `${String(model)} is not a built-in VMAF model`);
  const segment = r.referenceSegment;
  if (segment && !(segment.start >= 0 && segment.duration > 0))
    throw new MediaError("internal", "a reference segment needs a start from 0 and a duration over 0");
  // At the same size and format both chains pass frames through untouched. Frames pair by time, from
  // each input's first (Netflix's practice): a distorted file at a lower frame rate is scored with
  // its frames repeated, and an input that ends early has its last frame repeated (ffmpeg's framesync).
  const only = r.select?.length ? `,select='${r.select.map((w) => `gte(t,${w.start.toFixed(3)})*lt(t,${(w.start + w.duration).toFixed(3)})`).join("+")}'` : "";
  const prepare = `scale=${r.width}:${r.height}:flags=bicubic,format=yuv420p,setpts=PTS-STARTPTS${only}`;
  const vmaf = `libvmaf=model=version=${model}:log_fmt=json:log_path=vmaf.json:n_threads=${threads}:n_subsample=${subsample}`;
  // file: keeps a name with a colon from being read as a protocol; the scratch folder is the cwd.
  const input = (file: string) => `file:${path.resolve(file)}`;
  return [
    ...["-hide_banner", "-nostdin", "-loglevel", "error"],
    ...(r.distortedSegment ? ["-ss", String(r.distortedSegment.start), "-t", String(r.distortedSegment.duration)] : []),
    ...["-i", input(r.distorted)],
    ...(segment ? ["-ss", String(segment.start), "-t", String(segment.duration)] : []),
    ...["-i", input(r.reference)],
    ...["-lavfi", `[0:v]${prepare}[dis];[1:v]${prepare}[ref];[dis][ref]${vmaf}`],
    ...["-an", "-sn", "-dn", "-f", "null", "-"],
  ];
}

/** VMAF of `distorted` against `reference` (or a segment of it). Rejects with MediaError: canceled on abort, else the cause ffmpeg gave. */
export async function scoreVmaf(r: VmafRequest): Promise<VmafScore> {
  const args = vmafArgs(r);
  const binary = vmafBinary();
  if (r.signal?.aborted) throw new MediaError("canceled", "VMAF scoring canceled");
  const dir = await mkdtemp(path.join(tmpdir(), "vmaf-"));
  try {
    await run(binary, args, dir, r.signal);
    return parseVmafLog(await readFile(path.join(dir, "vmaf.json"), "utf8"));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function run(binary: string, args: string[], cwd: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    // ffmpeg starts nothing of its own: killing it is enough.
    execFile(binary, args, { cwd, signal, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      if (signal?.aborted) return reject(new MediaError("canceled", "VMAF scoring canceled"));
      const reason = stderr.trim().split("\n").slice(-3).join("\n") || err.message;
      reject(
        new MediaError(/No such file or directory|Permission denied/.test(reason) ? "input_unreachable" : "encode_failed", `VMAF scoring failed: ${reason}`),
      );
    });
  });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function finite(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw new MediaError("internal", `libvmaf's log has no ${what}`);
  return v;
}

/** The scores in libvmaf's JSON log (log_fmt=json). */
export function parseVmafLog(text: string): VmafScore {
  const log: unknown = JSON.parse(text);
  if (!isRecord(log) || !Array.isArray(log["frames"]) || !isRecord(log["pooled_metrics"])) throw new MediaError("internal", "libvmaf's log is not its JSON");
  const pooled = log["pooled_metrics"]["vmaf"];
  if (!isRecord(pooled)) throw new MediaError("internal", "libvmaf's log has no pooled vmaf");
  const frames = log["frames"].map((f: unknown) => finite(isRecord(f) && isRecord(f["metrics"]) ? f["metrics"]["vmaf"] : undefined, "frame score"));
  if (frames.length === 0) throw new MediaError("encode_failed", "VMAF scored no frame: an input has no video");
  return {
    mean: finite(pooled["mean"], "mean"),
    harmonicMean: finite(pooled["harmonic_mean"], "harmonic mean"),
    min: finite(pooled["min"], "min"),
    frames,
    version: typeof log["version"] === "string" ? log["version"] : "unknown",
  };
}
