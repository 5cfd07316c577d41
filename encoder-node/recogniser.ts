// The speech recogniser of an encoder node: one Python worker (encoder-node/asr/worker.py, faster-
// whisper with the Whisper base weights, a MiniLM sentence model for chapters) started on first use
// and reused for every task, spoken to in JSON lines. One request at a time, as the worker serves
// them. A canceled transcription kills the worker; the next request starts a new one.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Logger } from "../src/log.js";
import type { Chapter, TranscriptSegment } from "./captions.js";
import { MediaError } from "./media-errors.js";

export interface Transcript {
  /** Whisper's code of the spoken language, given or detected. */
  language: string;
  durationSeconds: number;
  segments: TranscriptSegment[];
}

export interface Recogniser {
  /** Transcribes a 16 kHz mono 16-bit WAV file; language "" detects it. */
  transcribe(wav: string, language: string, opts: { signal?: AbortSignal; onProgress?: (fraction: number) => void }): Promise<Transcript>;
  /** Topic chapters of a transcript's sentences, none shorter than minSeconds. */
  chapters(sentences: readonly { start: number; end: number; text: string }[], minSeconds: number, maxChapters: number): Promise<Chapter[]>;
  stop(): Promise<void>;
}

export interface RecogniserPaths {
  python: string;
  script: string;
  model: string;
  minilm: string;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Where scripts/asr-setup.sh puts things; MEDIA_ASR_PYTHON, MEDIA_ASR_MODEL (a directory, or a model name faster-whisper can fetch where the internet is reachable) and MEDIA_ASR_MINILM override. */
export function recogniserPaths(env: NodeJS.ProcessEnv = process.env): RecogniserPaths {
  return {
    python: env["MEDIA_ASR_PYTHON"] || path.join(ROOT, ".venv-asr", "bin", "python"),
    script: path.join(ROOT, "encoder-node", "asr", "worker.py"),
    model: env["MEDIA_ASR_MODEL"] || path.join(ROOT, ".cache", "asr", "whisper-base"),
    minilm: env["MEDIA_ASR_MINILM"] || path.join(ROOT, ".cache", "asr", "minilm"),
  };
}

type Line =
  | { id: string; type: "progress"; fraction: number }
  | { id: string; type: "result"; [k: string]: unknown }
  | { id: string; type: "error"; code: string; message: string };

interface Pending {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: Error) => void;
  onProgress?: (fraction: number) => void;
}

export function startRecogniser(paths: RecogniserPaths, log: Logger): Recogniser {
  let worker: ChildProcessWithoutNullStreams | undefined;
  const pending = new Map<string, Pending>();
  let next = 0;
  // One request at a time: the worker serves them in order, and a kill must not take others with it.
  let queue: Promise<unknown> = Promise.resolve();

  function spawnWorker(): ChildProcessWithoutNullStreams {
    if (!existsSync(paths.python))
      throw new MediaError(
        "transcription_failed",
        `the speech recogniser is not installed on this encoder node (no ${paths.python}); run bash scripts/asr-setup.sh`,
      );
    const child = spawn(paths.python, [paths.script, "--model", paths.model, "--minilm", paths.minilm], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, OMP_WAIT_POLICY: "PASSIVE", HF_HUB_OFFLINE: process.env["HF_HUB_OFFLINE"] ?? "1", PYTHONUNBUFFERED: "1" },
    });
    createInterface({ input: child.stdout }).on("line", (text) => {
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        log.warn({ line: text.slice(0, 200) }, "recogniser wrote a line that is not JSON");
        return;
      }
      const p = pending.get(line.id);
      if (!p) return;
      if (line.type === "progress") p.onProgress?.(line.fraction);
      else {
        pending.delete(line.id);
        if (line.type === "result") p.resolve(line);
        else p.reject(new MediaError(line.code === "unknown_language" ? "input_unsupported" : "transcription_failed", `speech recognition: ${line.message}`));
      }
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => {
      stderr = (stderr + b.toString("utf8")).slice(-4000);
    });
    child.on("exit", (code, sig) => {
      if (worker === child) worker = undefined;
      const failure = new MediaError(
        "transcription_failed",
        `the speech recogniser stopped (${sig ?? `exit ${code}`}): ${stderr.trim().split("\n").slice(-3).join(" | ")}`,
      );
      for (const [id, p] of pending) {
        pending.delete(id);
        p.reject(failure);
      }
    });
    child.on("error", (e) => log.warn({ err: e }, "recogniser process error"));
    return child;
  }

  function request(
    body: Record<string, unknown>,
    opts: { signal?: AbortSignal; onProgress?: (fraction: number) => void } = {},
  ): Promise<Record<string, unknown>> {
    const run = queue.then(
      () =>
        new Promise<Record<string, unknown>>((resolve, reject) => {
          if (opts.signal?.aborted) return reject(new MediaError("canceled", "canceled"));
          let child: ChildProcessWithoutNullStreams;
          try {
            child = worker ??= spawnWorker();
          } catch (e) {
            return reject(e as Error);
          }
          const id = String(++next);
          const onAbort = () => {
            // The only way to stop faster-whisper mid-chunk: the worker goes, and the next request starts another.
            child.kill("SIGKILL");
          };
          opts.signal?.addEventListener("abort", onAbort, { once: true });
          pending.set(id, {
            resolve: (v) => {
              opts.signal?.removeEventListener("abort", onAbort);
              resolve(v);
            },
            reject: (e) => {
              opts.signal?.removeEventListener("abort", onAbort);
              reject(opts.signal?.aborted ? new MediaError("canceled", "canceled") : e);
            },
            ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
          });
          child.stdin.write(`${JSON.stringify({ id, ...body })}\n`);
        }),
    );
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    async transcribe(wav, language, opts) {
      const r = await request({ op: "transcribe", wav, language, chunk_seconds: 300 }, opts);
      return {
        language: String(r["language"] ?? language),
        durationSeconds: Number(r["duration"] ?? 0),
        segments: (r["segments"] ?? []) as TranscriptSegment[],
      };
    },
    async chapters(sentences, minSeconds, maxChapters) {
      const r = await request({ op: "chapters", sentences, min_seconds: minSeconds, max_chapters: maxChapters });
      return (r["chapters"] ?? []) as Chapter[];
    },
    async stop() {
      worker?.stdin.end();
      worker?.kill("SIGTERM");
      worker = undefined;
    },
  };
}
