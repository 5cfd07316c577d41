// Runs ffmpeg: one process per command in its own process group (killed whole on abort), progress
// parsed from -progress, CPU time from -benchmark; then packages a protected plan and finishes its
// manifests.
import { spawn } from "node:child_process";
import { createDecipheriv } from "node:crypto";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { peakSegmentBitRate, type MeasuredSegment } from "./bandwidth.js";
import type { ContentKey } from "../src/drm/types.js";
import { MediaError, type MediaErrorCode } from "./media-errors.js";
import { signalMpdColour, type CicpColour } from "./hdr.js";
import { checkPackagingKeys, removeAes128KeyInfo, runPackager, writeAes128KeyInfo } from "./packager.js";
import type { HlsMasterPlan, OutputPlan } from "./plan.js";
import { probeStartSeconds, probeStreamCodec, type StreamCodec } from "./probe.js";
import { sniffStreamCodec } from "./codec-sniff.js";
import { writeIFramePlaylist } from "./iframes.js";

export interface RunProgress {
  fraction: number;
  outTimeMs: number;
  speed?: number;
}

export interface RunResult {
  /** User plus system CPU seconds of the ffmpeg process(es), from ffmpeg's -benchmark report. */
  cpuSeconds?: number;
  wallMs: number;
}

export interface RunOptions {
  durationMs: number;
  signal?: AbortSignal;
  onProgress?: (p: RunProgress) => void;
  cwd?: string;
  /** Run below the node's other work (nice(1)): a progressive plan's later rungs. */
  nice?: number;
}

const STDERR_LINES = 200;

/** Process groups of running ffmpegs, killed if this process exits first (they are detached). */
const running = new Set<number>();
let exitHook = false;
function track(pid: number): void {
  running.add(pid);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const p of running) killGroup(p);
  });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/**
 * Calls onProgress on every whole-percent change and at least once a second, never going back.
 * Returns update (from ffmpeg's reports) and stop (clears the timer).
 */
function throttle(emit: (fraction: number) => void) {
  let last = -1;
  let lastPercent = -1;
  let lastAt = 0;
  let current = 0;
  const send = () => {
    last = current;
    lastPercent = Math.floor(current * 100);
    lastAt = Date.now();
    emit(current);
  };
  // Checked every 100 ms against 900 ms: the longest gap between two reports is 1 s, not 1.25.
  const timer = setInterval(() => {
    if (Date.now() - lastAt >= 900) send();
  }, 100);
  timer.unref();
  return {
    update(fraction: number) {
      current = Math.max(current, Math.min(1, Math.max(0, fraction)));
      if (Math.floor(current * 100) !== lastPercent || (current !== last && Date.now() - lastAt >= 1000)) send();
    },
    stop() {
      clearInterval(timer);
    },
  };
}

/** The cause ffmpeg printed: its error lines (-loglevel level+ tags them), else its last lines. */
function failureReason(lines: string[]): string {
  const level = /\[(error|fatal|panic)\]:?\s*/;
  const errors = lines.filter((l) => level.test(l)).map((l) => l.replace(level, ""));
  const chosen = (errors.length > 0 ? errors : lines.map((l) => l.replace(/^\[\w+\]\s*/, ""))).filter((l) => l.trim() !== "").slice(-5);
  return chosen.join("\n");
}

function failureCode(reason: string): MediaErrorCode {
  if (/No space left on device|Disk quota exceeded/i.test(reason)) return "output_write_failed";
  if (/Permission denied|Read-only file system/i.test(reason)) return "output_write_denied";
  return "encode_failed";
}

/**
 * Runs one ffmpeg. Rejects with MediaError("canceled") on abort (the process group is gone by
 * then) and MediaError("encode_failed", last stderr lines) on a non-zero exit.
 */
export function runFfmpeg(args: string[], opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(new MediaError("canceled", "encode canceled"));
    const started = Date.now();
    // Own process group, so an abort kills ffmpeg and anything it started in one call.
    const [command, argv] = opts.nice ? ["nice", ["-n", String(opts.nice), "ffmpeg", ...args]] : ["ffmpeg", args];
    const child = spawn(command, argv, {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      // SVT-AV1 logs its banner straight to stderr; warnings and errors are enough.
      env: { ...process.env, SVT_LOG: "2" },
    });
    let outTimeMs = 0;
    let speed: number | undefined;
    let cpuSeconds: number | undefined;
    let canceled = false;
    let settled = false;
    const stderr: string[] = [];
    const progress = throttle((fraction) => opts.onProgress?.({ fraction, outTimeMs, ...(speed !== undefined ? { speed } : {}) }));

    const onAbort = () => {
      canceled = true;
      if (child.pid !== undefined) killGroup(child.pid);
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (child.pid !== undefined) track(child.pid);

    const finish = (err?: MediaError) => {
      if (settled) return;
      settled = true;
      progress.stop();
      opts.signal?.removeEventListener("abort", onAbort);
      if (child.pid !== undefined) running.delete(child.pid);
      if (err) return reject(err);
      progress.update(1);
      resolve({ ...(cpuSeconds !== undefined ? { cpuSeconds } : {}), wallMs: Date.now() - started });
    };

    // -progress writes key=value lines; a report ends with progress=continue (or end).
    lines(child.stdout, (line) => {
      const eq = line.indexOf("=");
      const key = line.slice(0, eq);
      const value = line.slice(eq + 1).trim();
      if (key === "out_time_us" && Number(value) >= 0) outTimeMs = Number(value) / 1000;
      else if (key === "speed") speed = Number.isFinite(Number.parseFloat(value)) ? Number.parseFloat(value) : undefined;
      else if (key === "progress" && opts.durationMs > 0) progress.update(outTimeMs / opts.durationMs);
    });
    lines(child.stderr, (line) => {
      const bench = /bench: utime=([\d.]+)s stime=([\d.]+)s/.exec(line);
      if (bench) cpuSeconds = Math.round((Number(bench[1]) + Number(bench[2])) * 1000) / 1000;
      stderr.push(line);
      if (stderr.length > STDERR_LINES) stderr.shift();
    });

    child.once("error", (e: NodeJS.ErrnoException) => {
      finish(new MediaError("internal", e.code === "ENOENT" ? "ffmpeg is not installed on this encoder node" : `ffmpeg could not start: ${e.message}`));
    });
    // On abort, exit is enough: the group is dead and nothing more is worth reading.
    child.once("exit", () => {
      if (canceled) finish(new MediaError("canceled", "encode canceled"));
    });
    child.once("close", (code, sig) => {
      if (canceled) return finish(new MediaError("canceled", "encode canceled"));
      if (code === 0) return finish();
      const reason = failureReason(stderr) || (sig ? `ffmpeg was killed by ${sig}` : `ffmpeg exited with code ${code}`);
      finish(new MediaError(failureCode(reason), reason));
    });
  });
}

/** Calls fn with each complete line of a stream (and the unterminated last one at its end). */
function lines(stream: NodeJS.ReadableStream, fn: (line: string) => void): void {
  let pending = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    pending += chunk;
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    parts.forEach(fn);
  });
  stream.on("end", () => {
    if (pending !== "") fn(pending);
  });
}

/** Share of a protected output's progress that packaging stands for: about 0.2 s per 10 s rendition, next to encoding's minutes. */
const PACKAGING_SHARE = 0.03;

/**
 * Runs a plan's commands (all at once when parallel, else in order), packages a protected plan
 * with `keys`, and writes the manifests the plan asks for. Progress is the weighted mean of the
 * commands' progress; a failed command stops the others and its error is the one reported.
 */
export async function runPlan(
  plan: OutputPlan,
  opts: {
    signal?: AbortSignal;
    onProgress?: (fraction: number) => void;
    keys?: readonly ContentKey[];
    /**
     * Called again and again while the commands run (never twice at once), and once after they all
     * succeeded: a progressive plan's publisher. It may answer how long to wait before the next call
     * (WHILE_RUNNING_MS by default).
     */
    whileRunning?: () => Promise<number | void>;
  },
): Promise<RunResult> {
  if (opts.signal?.aborted) throw new MediaError("canceled", "encode canceled");
  const started = Date.now();
  await mkdir(plan.dir, { recursive: true });
  const n = plan.commands.length;
  const weights = plan.weights && plan.weights.length === n ? plan.weights : plan.commands.map(() => 1);
  const total = weights.reduce((a, b) => a + b, 0) || 1;
  const fractions = plan.commands.map(() => 0);
  const reporter = throttle((f) => opts.onProgress?.(f));
  const encodeShare = plan.packaging ? 1 - PACKAGING_SHARE : 1;
  // Manifests are the last step: commands together stop just short of 1.
  const report = () => reporter.update(Math.min(0.999, (encodeShare * fractions.reduce((sum, f, i) => sum + f * weights[i]!, 0)) / total));
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  let cpu = 0;
  let cpuKnown = true;
  const run = async (i: number) => {
    const r = await runFfmpeg(plan.commands[i]!, {
      durationMs: plan.durationMs,
      signal: stop.signal,
      ...(plan.nice?.[i] ? { nice: plan.nice[i] } : {}),
      onProgress: (p) => ((fractions[i] = p.fraction), report()),
    });
    fractions[i] = 1;
    report();
    if (r.cpuSeconds === undefined) cpuKnown = false;
    else cpu += r.cpuSeconds;
  };
  // ffmpeg's HLS muxer takes one key info file for every stream: aes_128 encrypts with the first key given.
  const aes128Key = opts.keys?.[0];
  try {
    if (plan.aes128) {
      if (!aes128Key) throw new MediaError("internal", "the output is encrypted with aes_128, but no content key was given");
      await writeAes128KeyInfo(plan.aes128.keyInfoFile, aes128Key);
    }
    if (plan.packaging) {
      checkPackagingKeys(plan.packaging, opts.keys ?? []);
      await mkdir(plan.packaging.clearDir, { recursive: true });
    }
    // The hook runs beside the commands; its failure stops them, as a command's would.
    let hookFailure: unknown;
    let commandsDone = false;
    const hook = opts.whileRunning;
    const hookLoop = hook
      ? (async () => {
          let wait = WHILE_RUNNING_MS;
          while (!commandsDone && !stop.signal.aborted) {
            await new Promise((r) => setTimeout(r, wait));
            if (commandsDone || stop.signal.aborted) break;
            wait = (await hook()) ?? WHILE_RUNNING_MS;
          }
        })().catch((e: unknown) => {
          hookFailure = e;
          stop.abort();
        })
      : Promise.resolve();
    let commandFailure: unknown;
    try {
      await runCommands();
    } catch (e) {
      commandFailure = e;
    } finally {
      commandsDone = true;
      await hookLoop;
    }
    // A failed hook stopped the commands: its failure is the cause.
    if (hookFailure !== undefined) throw hookFailure;
    if (commandFailure !== undefined) throw commandFailure;
    if (hook) await hook();
    if (plan.packaging) {
      await runPackager(plan.packaging, opts.keys ?? [], { signal: stop.signal });
      reporter.update(0.999);
    }
    if (plan.aes128 && aes128Key && plan.hlsMaster)
      await probeAes128Codecs(plan.dir, plan.hlsMaster, aes128Key, path.dirname(plan.aes128.keyInfoFile), stop.signal);
    if (plan.dashManifest) await finishMpd(path.join(plan.dir, plan.dashManifest.file), plan.dashManifest.minBufferTimeSeconds, plan.dashManifest.colour);
    // A chunked ladder's master waits for the join (encoder-node/chunks.ts).
    if (plan.hlsMaster && !plan.chunked) await writeHlsMaster(plan.dir, plan.hlsMaster, stop.signal);
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    reporter.stop();
    if (plan.aes128) await removeAes128KeyInfo(plan.aes128.keyInfoFile);
  }
  if (opts.signal?.aborted) throw new MediaError("canceled", "encode canceled");
  opts.onProgress?.(1);
  return { ...(cpuKnown ? { cpuSeconds: Math.round(cpu * 1000) / 1000 } : {}), wallMs: Date.now() - started };

  async function runCommands(): Promise<void> {
    if (plan.parallel) {
      let first: unknown;
      await Promise.all(
        plan.commands.map((_, i) =>
          run(i).catch((e: unknown) => {
            // The first failure is the cause; the others were stopped because of it.
            if (first === undefined) first = e;
            stop.abort();
          }),
        ),
      );
      if (first !== undefined) throw opts.signal?.aborted ? new MediaError("canceled", "encode canceled") : first;
    } else {
      for (let i = 0; i < n; i++) await run(i);
    }
  }
}

/** How often a progressive plan's publisher looks for new segments: a 4 s segment of a low rung takes about half a second here. */
const WHILE_RUNNING_MS = 150;

// ───────────────────────────── manifests ─────────────────────────────

/** Sets an MPD's minBufferTime, and signals PQ or HLG video (hdr.ts): neither the dash muxer nor the packager has an option for them. */
async function finishMpd(file: string, seconds: number, colour: CicpColour | undefined): Promise<void> {
  const mpd = (await readFile(file, "utf8")).replace(/minBufferTime="[^"]*"/, `minBufferTime="PT${seconds}S"`);
  await writeFile(file, colour ? signalMpdColour(mpd, colour) : mpd);
}

export interface MediaPlaylist {
  version: number;
  init?: string;
  segments: { uri: string; duration: number; bytes?: number }[];
}

/** The parts of a media playlist the master needs: segments with durations, byte ranges, the init map. */
export function parseMediaPlaylist(text: string): MediaPlaylist {
  const out: MediaPlaylist = { version: 1, segments: [] };
  let duration = 0;
  let bytes: number | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "") continue;
    if (line.startsWith("#EXT-X-VERSION:")) out.version = Number(line.slice(15)) || 1;
    else if (line.startsWith("#EXT-X-MAP:")) out.init ??= /URI="([^"]+)"/.exec(line)?.[1];
    else if (line.startsWith("#EXTINF:")) duration = Number.parseFloat(line.slice(8));
    else if (line.startsWith("#EXT-X-BYTERANGE:")) bytes = Number.parseInt(line.slice(17), 10);
    else if (!line.startsWith("#")) {
      out.segments.push({ uri: line, duration, ...(bytes !== undefined ? { bytes } : {}) });
      duration = 0;
      bytes = undefined;
    }
  }
  return out;
}

/** RFC 6381 codec string of an encoded stream, as HLS CODECS wants it. */
export function codecString(c: StreamCodec, isoBmff: boolean): string {
  const hex = (n: number) => n.toString(16).padStart(2, "0").toUpperCase();
  switch (c.codec) {
    case "h264": {
      const profile: Record<string, string> = {
        "Constrained Baseline": "42E0",
        Baseline: "4200",
        Main: "4D40",
        Extended: "5800",
        High: "6400",
        "High 10": "6E00",
        "High 4:2:2": "7A00",
        "High 4:4:4 Predictive": "F400",
      };
      return `avc1.${profile[c.profile] ?? "6400"}${hex(Math.max(0, c.level))}`;
    }
    case "hevc": {
      const main10 = c.profile === "Main 10";
      return `${isoBmff ? "hvc1" : "hev1"}.${main10 ? "2.4" : "1.6"}.L${Math.max(0, c.level)}.B0`;
    }
    case "av1": {
      const profile = c.profile === "High" ? 1 : c.profile === "Professional" ? 2 : 0;
      const depth = /10/.test(c.pixelFormat) ? "10" : "08";
      return `av01.${profile}.${String(Math.max(0, c.level)).padStart(2, "0")}M.${depth}`;
    }
    case "vp9": {
      // ffprobe names the profile "Profile 2"; 10-bit is profile 2 (4:2:0) or 3 (4:4:4) when it does not.
      const tenBit = /10/.test(c.pixelFormat);
      const profile = /Profile ([0-3])/.exec(c.profile)?.[1] ?? (tenBit ? (/444/.test(c.pixelFormat) ? "3" : "2") : /444/.test(c.pixelFormat) ? "1" : "0");
      return `vp09.0${profile}.${String(Math.max(10, c.level)).padStart(2, "0")}.${tenBit ? "10" : "08"}`;
    }
    case "aac":
      return c.profile === "HE-AAC" ? "mp4a.40.5" : c.profile === "HE-AACv2" ? "mp4a.40.29" : "mp4a.40.2";
    case "mp3":
      return "mp4a.40.34";
    case "opus":
      return "Opus";
    default:
      return c.codec;
  }
}

/**
 * The codec string of a media playlist's stream, from its first segment (and init segment): read
 * from the first bytes where that is exact (codec-sniff.ts), else ffprobe's. `base` is the playlist's folder.
 */
export async function playlistCodecString(base: string, media: MediaPlaylist, signal: AbortSignal): Promise<string> {
  const first = path.join(base, media.segments[0]!.uri);
  const init = media.init ? path.join(base, media.init) : undefined;
  const codec = (await sniffStreamCodec(init ?? first)) ?? (await probeStreamCodec(init ? `concat:${init}|${first}` : first, signal));
  return codecString(codec, init !== undefined);
}

interface Measured {
  version: number;
  peak: number;
  average: number;
  codecs: string;
}

/** Peak and average bits per second over a media playlist's segments, and its codec string (probed unless known). */
async function measure(
  dir: string,
  playlist: string,
  known: string | undefined,
  signal: AbortSignal,
  stored: Readonly<Record<string, number>> = {},
): Promise<Measured> {
  const base = path.dirname(path.join(dir, playlist));
  const media = parseMediaPlaylist(await readFile(path.join(dir, playlist), "utf8"));
  if (media.segments.length === 0) throw new MediaError("encode_failed", `${playlist} lists no segments`);
  let bits = 0;
  let seconds = 0;
  const sizes = new Map<string, number>();
  const measured: MeasuredSegment[] = [];
  for (const s of media.segments) {
    const size = s.bytes ?? sizes.get(s.uri) ?? stored[path.posix.join(path.posix.dirname(playlist), s.uri)] ?? (await stat(path.join(base, s.uri))).size;
    sizes.set(s.uri, size);
    bits += size * 8;
    seconds += s.duration;
    measured.push({ duration: s.duration, bytes: size });
  }
  const peak = peakSegmentBitRate(measured);
  const codecs = known ?? (await playlistCodecString(base, media, signal));
  return { version: media.version, peak: Math.ceil(peak), average: Math.ceil(bits / Math.max(seconds, 0.001)), codecs };
}

/**
 * aes_128: ffprobe cannot read an encrypted ts segment, so each media playlist's codec string is
 * probed here once, from its first segment decrypted into `scratch`, and kept in the master plan
 * for every later write of the master (the subtitle renditions write it again, after the key is gone).
 */
async function probeAes128Codecs(dir: string, m: HlsMasterPlan, key: ContentKey, scratch: string, signal: AbortSignal): Promise<void> {
  for (const entry of [...m.variants, ...m.audio]) {
    const file = path.join(dir, entry.playlist);
    const text = await readFile(file, "utf8");
    const iv = /^#EXT-X-KEY:METHOD=AES-128,.*IV=0x([0-9a-f]{32})/im.exec(text)?.[1];
    const first = parseMediaPlaylist(text).segments[0];
    if (!iv || !first) throw new MediaError("encode_failed", `${entry.playlist} has no AES-128 key line with an IV, or no segment`);
    // With single_file the first segment is the file's first byte range.
    const bytes = (await readFile(path.join(path.dirname(file), first.uri))).subarray(0, first.bytes);
    const decipher = createDecipheriv("aes-128-cbc", Buffer.from(key.key, "hex"), Buffer.from(iv, "hex"));
    const clear = path.join(scratch, "probe.ts");
    await writeFile(clear, Buffer.concat([decipher.update(bytes), decipher.final()]));
    entry.codecs = codecString(await probeStreamCodec(clear, signal), false);
    m.firstTimestampSeconds ??= await probeStartSeconds(clear, signal);
    await rm(clear, { force: true });
  }
}

/**
 * A progressive plan's master while it encodes: the variants whose media playlists are given
 * (the first rung, then every rung once the others are complete), measured on the segments
 * written so far. runPlan writes it again, whole, at the end.
 */
export async function writeGrowingHlsMaster(
  plan: OutputPlan,
  playlists: readonly string[],
  file: string,
  key: ContentKey | undefined,
  signal: AbortSignal,
): Promise<void> {
  const m = plan.hlsMaster;
  if (!m) throw new MediaError("internal", "a progressive plan without a master");
  const listed = new Set(playlists);
  // I-frame playlists are written with the whole master, from complete media playlists.
  const variants = m.variants.filter((v) => listed.has(v.playlist)).map(({ iframes: _, ...v }) => v);
  const partial: HlsMasterPlan = { ...m, variants, subtitles: [], sessionData: [] };
  // aes_128: codecs are probed from a decrypted first segment, and kept (the entries are the plan's own) for the final master.
  if (plan.aes128 && key) {
    const unknown = { ...partial, variants: partial.variants.filter((v) => !v.codecs), audio: partial.audio.filter((a) => !a.codecs) };
    if (unknown.variants.length + unknown.audio.length > 0) await probeAes128Codecs(plan.dir, unknown, key, path.dirname(plan.aes128.keyInfoFile), signal);
    m.firstTimestampSeconds ??= unknown.firstTimestampSeconds;
  }
  await writeHlsMaster(plan.dir, partial, signal, file);
}

const quoted = (s: string) => `"${s.replace(/["\r\n]/g, "'")}"`;

/** Writes the multivariant playlist from what was produced: measured bandwidths, probed codecs. */
export async function writeHlsMaster(dir: string, m: HlsMasterPlan, signal: AbortSignal, to = path.join(dir, m.file)): Promise<void> {
  const audio = await Promise.all(m.audio.map(async (a) => ({ ...a, ...(await measure(dir, a.playlist, a.codecs, signal, m.storedBytes)) })));
  const variants = await Promise.all(m.variants.map(async (v) => ({ ...v, ...(await measure(dir, v.playlist, v.codecs, signal, m.storedBytes)) })));
  const version = Math.max(3, ...audio.map((a) => a.version), ...variants.map((v) => v.version));
  const lines = ["#EXTM3U", `#EXT-X-VERSION:${version}`, "#EXT-X-INDEPENDENT-SEGMENTS"];
  const audioOnly = variants.length === 0;
  // An audio-only output with one track is a single variant; several tracks form a group over the first.
  const grouped = !audioOnly || audio.length > 1;
  if (grouped) {
    for (const a of audio) {
      const attrs = [`TYPE=AUDIO`, `GROUP-ID=${quoted(a.groupId)}`, `NAME=${quoted(a.name)}`];
      if (a.language) attrs.push(`LANGUAGE=${quoted(a.language)}`);
      attrs.push(`DEFAULT=${a.isDefault ? "YES" : "NO"}`, "AUTOSELECT=YES", `CHANNELS=${quoted(String(a.channels))}`, `URI=${quoted(a.playlist)}`);
      lines.push(`#EXT-X-MEDIA:${attrs.join(",")}`);
    }
  }
  // Subtitle renditions: WebVTT playlists the players list beside the audio; captions carry Apple's accessibility characteristics.
  const subtitles = m.subtitles ?? [];
  for (const s of subtitles) {
    const attrs = [`TYPE=SUBTITLES`, `GROUP-ID=${quoted(s.groupId)}`, `NAME=${quoted(s.name)}`];
    if (s.language) attrs.push(`LANGUAGE=${quoted(s.language)}`);
    attrs.push(`DEFAULT=${s.isDefault ? "YES" : "NO"}`, `AUTOSELECT=${s.isDefault || !s.forced ? "YES" : "NO"}`, `FORCED=${s.forced ? "YES" : "NO"}`);
    if (s.captions) attrs.push(`CHARACTERISTICS=${quoted("public.accessibility.transcribes-spoken-dialog,public.accessibility.describes-music-and-sound")}`);
    attrs.push(`URI=${quoted(s.playlist)}`);
    lines.push(`#EXT-X-MEDIA:${attrs.join(",")}`);
  }
  for (const d of m.sessionData ?? [])
    lines.push(`#EXT-X-SESSION-DATA:DATA-ID=${quoted(d.id)},URI=${quoted(d.uri)}${d.language ? `,LANGUAGE=${quoted(d.language)}` : ""}`);
  const subtitleGroup = subtitles[0]?.groupId;
  const audioCodecs = [...new Set(audio.map((a) => a.codecs))];
  const audioPeak = Math.max(0, ...audio.map((a) => a.peak));
  const audioAverage = Math.max(0, ...audio.map((a) => a.average));
  for (const v of variants) {
    const codecs = [v.codecs, ...(v.audioGroup ? audioCodecs : [])].join(",");
    const attrs = [
      `BANDWIDTH=${v.peak + (v.audioGroup ? audioPeak : 0)}`,
      `AVERAGE-BANDWIDTH=${v.average + (v.audioGroup ? audioAverage : 0)}`,
      `CODECS=${quoted(codecs)}`,
      `RESOLUTION=${v.width}x${v.height}`,
      `FRAME-RATE=${v.frameRate.toFixed(3)}`,
    ];
    if (v.videoRange) attrs.push(`VIDEO-RANGE=${v.videoRange}`);
    if (v.audioGroup) attrs.push(`AUDIO=${quoted(v.audioGroup)}`);
    if (subtitleGroup) attrs.push(`SUBTITLES=${quoted(subtitleGroup)}`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(",")}`, v.playlist);
  }
  for (const [i, v] of variants.entries()) {
    const iframes = m.variants[i]!.iframes;
    if (!iframes) continue;
    // Measured once: a later master (with subtitles) lists the same playlist.
    iframes.rates ??= await writeIFramePlaylist(dir, v.playlist);
    const attrs = [
      `BANDWIDTH=${iframes.rates.peak}`,
      `AVERAGE-BANDWIDTH=${iframes.rates.average}`,
      `CODECS=${quoted(v.codecs)}`,
      `RESOLUTION=${v.width}x${v.height}`,
      ...(v.videoRange ? [`VIDEO-RANGE=${v.videoRange}`] : []),
      `URI=${quoted(iframes.playlist)}`,
    ];
    lines.push(`#EXT-X-I-FRAME-STREAM-INF:${attrs.join(",")}`);
  }
  if (audioOnly) {
    const a = audio.find((x) => x.isDefault) ?? audio[0];
    if (!a) throw new MediaError("internal", "an HLS output with neither video nor audio");
    const attrs = [`BANDWIDTH=${audioPeak}`, `AVERAGE-BANDWIDTH=${audioAverage}`, `CODECS=${quoted(audioCodecs.join(","))}`];
    if (grouped) attrs.push(`AUDIO=${quoted(a.groupId)}`);
    if (subtitleGroup) attrs.push(`SUBTITLES=${quoted(subtitleGroup)}`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(",")}`, a.playlist);
  }
  await writeFile(to, `${lines.join("\n")}\n`);
}
