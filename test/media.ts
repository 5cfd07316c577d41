// Shared helpers for media tests: generated test inputs (a test pattern with a tone), ffprobe as
// JSON, and small HLS and DASH manifest readers that list every file a manifest names.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

export interface TestInputOptions {
  seconds: number;
  width: number;
  height: number;
  fps: number;
  audio: boolean;
  /** Video encoder of the test file; default libx264 (ultrafast). */
  codec?: "libx264" | "libx265" | "libvpx-vp9" | "libsvtav1";
  /** Video bitrate, e.g. "150k", instead of the encoder's default quality. */
  videoBitrate?: string;
  /** Tone level in dB (the sine source is about -18 dBFS); e.g. -20 for a quiet input. */
  volumeDb?: number;
  /** Extra audio streams (copies of the tone at other pitches), for multi-language inputs. */
  extraAudioStreams?: number;
}

/** Writes a test pattern (testsrc2) with a sine tone; fast settings keep it to a fraction of a second. */
export async function makeTestInput(file: string, o: TestInputOptions): Promise<string> {
  const codec = o.codec ?? "libx264";
  const args = ["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-f", "lavfi", "-i", `testsrc2=s=${o.width}x${o.height}:r=${o.fps}:d=${o.seconds}`];
  const tones = o.audio ? 1 + (o.extraAudioStreams ?? 0) : 0;
  for (let i = 0; i < tones; i++) args.push("-f", "lavfi", "-i", `sine=f=${440 + 220 * i}:sample_rate=48000:d=${o.seconds}`);
  args.push("-map", "0:v");
  for (let i = 0; i < tones; i++) args.push("-map", `${i + 1}:a`);
  const speed: Record<string, string[]> = {
    libx264: ["-preset", "ultrafast"],
    libx265: ["-preset", "ultrafast", "-x265-params", "log-level=error"],
    "libvpx-vp9": ["-deadline", "realtime", "-cpu-used", "8"],
    libsvtav1: ["-preset", "12"],
  };
  args.push("-c:v", codec, ...speed[codec]!, "-pix_fmt", "yuv420p", "-g", String(o.fps));
  if (o.videoBitrate) args.push("-b:v", o.videoBitrate);
  if (tones > 0) {
    const webm = file.endsWith(".webm");
    args.push("-c:a", webm ? "libopus" : "aac", "-b:a", "96k", "-ac", "2");
    if (o.volumeDb !== undefined) args.push("-af", `volume=${o.volumeDb}dB`);
  }
  args.push(file);
  await exec("ffmpeg", args, { env: { ...process.env, SVT_LOG: "1" } });
  return file;
}

export interface ProbedStream {
  index: number;
  codec_type: string;
  codec_name: string;
  codec_tag_string?: string;
  profile?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  avg_frame_rate?: string;
  sample_rate?: string;
  channels?: number;
  bit_rate?: string;
  duration?: string;
  tags?: Record<string, string>;
}
export interface Probed {
  format: { format_name: string; duration?: string; bit_rate?: string; size?: string };
  streams: ProbedStream[];
}

export async function ffprobeJson(file: string): Promise<Probed> {
  const { stdout } = await exec("ffprobe", ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", file], { maxBuffer: 32 * 1024 * 1024 });
  return JSON.parse(stdout) as Probed;
}

export const videoOf = (p: Probed) => p.streams.find((s) => s.codec_type === "video");
export const audiosOf = (p: Probed) => p.streams.filter((s) => s.codec_type === "audio");
export const durationOf = (p: Probed) => Number(p.format.duration ?? 0);

/** Top-level ISO-BMFF box types in order (faststart puts moov before mdat). */
export function topLevelBoxes(file: string): string[] {
  const buf = readFileSync(file);
  const boxes: string[] = [];
  let at = 0;
  while (at + 8 <= buf.length) {
    let size = buf.readUInt32BE(at);
    const type = buf.toString("latin1", at + 4, at + 8);
    if (size === 1) size = Number(buf.readBigUInt64BE(at + 8));
    if (size === 0) size = buf.length - at;
    boxes.push(type);
    if (size < 8) break;
    at += size;
  }
  return boxes;
}

/** Integrated loudness (LUFS) measured by ffmpeg's ebur128 filter. */
export async function loudnessLufs(file: string): Promise<number> {
  const { stderr } = await exec("ffmpeg", ["-hide_banner", "-nostdin", "-i", file, "-map", "0:a:0", "-af", "ebur128", "-f", "null", "-"]);
  const summary = stderr.slice(stderr.lastIndexOf("Summary:"));
  const m = /I:\s+(-?[\d.]+) LUFS/.exec(summary);
  if (!m) throw new Error(`no loudness summary for ${file}`);
  return Number(m[1]);
}

// ───────────────────────────── HLS ─────────────────────────────

export interface HlsVariant {
  uri: string;
  attributes: Record<string, string>;
}
export interface HlsMaster {
  variants: HlsVariant[];
  media: Record<string, string>[];
}
export interface HlsMedia {
  version: number;
  targetDuration: number;
  playlistType?: string;
  endList: boolean;
  init?: string;
  segments: { uri: string; duration: number; byteRange?: string }[];
}

/** Attribute list of a tag: KEY=VALUE,KEY="quoted, value". */
export function parseAttributes(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of list.matchAll(/([A-Z0-9-]+)=("[^"]*"|[^,]*)/g)) out[m[1]!] = m[2]!.replace(/^"|"$/g, "");
  return out;
}

export function parseHlsMaster(text: string): HlsMaster {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines[0] !== "#EXTM3U") throw new Error("not an M3U8 playlist");
  const master: HlsMaster = { variants: [], media: [] };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith("#EXT-X-STREAM-INF:")) master.variants.push({ attributes: parseAttributes(line.slice(18)), uri: lines[++i] ?? "" });
    else if (line.startsWith("#EXT-X-MEDIA:")) master.media.push(parseAttributes(line.slice(13)));
    else if (line.startsWith("#EXT-X-I-FRAME-STREAM-INF:"))
      master.variants.push({ attributes: parseAttributes(line.slice(26)), uri: parseAttributes(line.slice(26)).URI ?? "" });
  }
  return master;
}

export function parseHlsMedia(text: string): HlsMedia {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines[0] !== "#EXTM3U") throw new Error("not an M3U8 playlist");
  const media: HlsMedia = { version: 1, targetDuration: 0, endList: false, segments: [] };
  let duration = 0;
  let byteRange: string | undefined;
  for (const line of lines) {
    if (line.startsWith("#EXT-X-VERSION:")) media.version = Number(line.slice(15));
    else if (line.startsWith("#EXT-X-TARGETDURATION:")) media.targetDuration = Number(line.slice(22));
    else if (line.startsWith("#EXT-X-PLAYLIST-TYPE:")) media.playlistType = line.slice(21);
    else if (line === "#EXT-X-ENDLIST") media.endList = true;
    else if (line.startsWith("#EXT-X-MAP:")) media.init = parseAttributes(line.slice(11)).URI;
    else if (line.startsWith("#EXTINF:")) duration = Number.parseFloat(line.slice(8));
    else if (line.startsWith("#EXT-X-BYTERANGE:")) byteRange = line.slice(17);
    else if (!line.startsWith("#")) {
      media.segments.push({ uri: line, duration, ...(byteRange ? { byteRange } : {}) });
      byteRange = undefined;
    }
  }
  return media;
}

export interface HlsTree {
  master: HlsMaster;
  /** Media playlist path (relative to the root folder) → its parsed content. */
  playlists: Map<string, HlsMedia>;
  /** Every init and segment file named, relative to the root folder, without duplicates. */
  files: string[];
}

/** Reads a master playlist and every media playlist it names. */
export function readHls(dir: string, masterFile: string): HlsTree {
  const master = parseHlsMaster(readFileSync(path.join(dir, masterFile), "utf8"));
  const base = path.posix.dirname(masterFile);
  const uris = [...master.variants.map((v) => v.uri), ...master.media.map((m) => m.URI).filter((u): u is string => !!u)];
  const playlists = new Map<string, HlsMedia>();
  const files = new Set<string>();
  for (const uri of new Set(uris)) {
    const rel = path.posix.normalize(path.posix.join(base, uri));
    const media = parseHlsMedia(readFileSync(path.join(dir, rel), "utf8"));
    playlists.set(rel, media);
    const folder = path.posix.dirname(rel);
    if (media.init) files.add(path.posix.join(folder, media.init));
    for (const s of media.segments) files.add(path.posix.join(folder, s.uri));
  }
  return { master, playlists, files: [...files] };
}

// ───────────────────────────── DASH ─────────────────────────────

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
}

/** A small XML reader for MPDs: elements and attributes; text, comments and declarations are skipped. */
export function parseXml(text: string): XmlElement {
  const root: XmlElement = { name: "#root", attributes: {}, children: [] };
  const stack = [root];
  const tag = /<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!\[CDATA\[[\s\S]*?\]\]>/g;
  for (const m of text.matchAll(tag)) {
    if (!m[2]) continue;
    const [, closing, name, attrs = "", selfClosing] = m;
    if (closing) {
      if (stack.length > 1) stack.pop();
      continue;
    }
    const el: XmlElement = { name, attributes: {}, children: [] };
    for (const a of attrs.matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) el.attributes[a[1]!] = a[2] ?? a[3] ?? "";
    stack[stack.length - 1]!.children.push(el);
    if (!selfClosing) stack.push(el);
  }
  const mpd = root.children[0];
  if (!mpd) throw new Error("no XML element");
  return mpd;
}

const child = (el: XmlElement, name: string) => el.children.find((c) => c.name === name);
const children = (el: XmlElement, name: string) => el.children.filter((c) => c.name === name);

/** ISO 8601 duration as seconds: PT1H2M3.5S. */
export function isoSeconds(value: string | undefined): number {
  const m = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value ?? "");
  if (!m) return 0;
  const [, d = "0", h = "0", min = "0", s = "0"] = m;
  return Number(d) * 86400 + Number(h) * 3600 + Number(min) * 60 + Number(s);
}

/** Fills a SegmentTemplate pattern: $RepresentationID$, $Bandwidth$, $Number%05d$, $Time$, $$. */
export function fillTemplate(pattern: string, vars: { RepresentationID: string; Bandwidth: string; Number?: number; Time?: number }): string {
  return pattern.replace(/\$(\w*)(?:%0(\d+)d)?\$/g, (_, name: string, width?: string) => {
    if (name === "") return "$";
    const value = (vars as unknown as Record<string, string | number | undefined>)[name];
    if (value === undefined) throw new Error(`template variable $${name}$ has no value`);
    return width ? String(value).padStart(Number(width), "0") : String(value);
  });
}

export interface DashRepresentation {
  id: string;
  contentType: string;
  codecs: string;
  bandwidth: number;
  width?: number;
  height?: number;
  /** Files named, relative to the MPD's folder: init first, then media segments in order. */
  files: string[];
}
export interface DashManifest {
  type: string;
  durationSeconds: number;
  minBufferTimeSeconds: number;
  representations: DashRepresentation[];
}

/**
 * Reads an MPD and expands every representation's segments to file names: SegmentTemplate with
 * $Number$ (count from the period duration) or SegmentTimeline (S@t, @d, @r), SegmentList, and
 * single-file BaseURL.
 */
export function parseMpd(text: string): DashManifest {
  const mpd = parseXml(text);
  if (mpd.name !== "MPD") throw new Error(`root element is ${mpd.name}, not MPD`);
  const total = isoSeconds(mpd.attributes.mediaPresentationDuration);
  const out: DashManifest = {
    type: mpd.attributes.type ?? "static",
    durationSeconds: total,
    minBufferTimeSeconds: isoSeconds(mpd.attributes.minBufferTime),
    representations: [],
  };
  for (const period of children(mpd, "Period")) {
    const periodSeconds = isoSeconds(period.attributes.duration) || total - isoSeconds(period.attributes.start);
    for (const set of children(period, "AdaptationSet")) {
      for (const rep of children(set, "Representation")) {
        const id = rep.attributes.id ?? "";
        const vars = { RepresentationID: id, Bandwidth: rep.attributes.bandwidth ?? "" };
        const template = child(rep, "SegmentTemplate") ?? child(set, "SegmentTemplate");
        const files: string[] = [];
        if (template) {
          const t = template.attributes;
          if (t.initialization) files.push(fillTemplate(t.initialization, vars));
          const timescale = Number(t.timescale ?? 1);
          let number = Number(t.startNumber ?? 1);
          const timeline = child(template, "SegmentTimeline");
          if (timeline) {
            let time = 0;
            for (const s of children(timeline, "S")) {
              if (s.attributes.t !== undefined) time = Number(s.attributes.t);
              const d = Number(s.attributes.d);
              const repeats = Number(s.attributes.r ?? 0);
              for (let k = 0; k <= repeats; k++) {
                files.push(fillTemplate(t.media ?? "", { ...vars, Number: number++, Time: time }));
                time += d;
              }
            }
          } else if (t.media && t.duration) {
            const count = Math.ceil(periodSeconds / (Number(t.duration) / timescale) - 1e-6);
            for (let k = 0; k < count; k++) files.push(fillTemplate(t.media, { ...vars, Number: number++ }));
          }
        } else {
          const list = child(rep, "SegmentList");
          if (list) {
            const init = child(list, "Initialization")?.attributes.sourceURL;
            if (init) files.push(init);
            for (const u of children(list, "SegmentURL")) if (u.attributes.media) files.push(u.attributes.media);
          }
          const baseUrl = child(rep, "BaseURL");
          // BaseURL's text is not kept by the reader; single-file MPDs are read from the raw text.
          if (baseUrl) {
            const m = new RegExp(`<Representation[^>]*id="${id}"[\\s\\S]*?<BaseURL>([^<]+)</BaseURL>`).exec(text);
            if (m?.[1]) files.push(m[1].trim());
          }
        }
        out.representations.push({
          id,
          contentType: set.attributes.contentType ?? (rep.attributes.mimeType ?? set.attributes.mimeType ?? "").split("/")[0] ?? "",
          codecs: rep.attributes.codecs ?? set.attributes.codecs ?? "",
          bandwidth: Number(rep.attributes.bandwidth ?? 0),
          ...(rep.attributes.width ? { width: Number(rep.attributes.width) } : {}),
          ...(rep.attributes.height ? { height: Number(rep.attributes.height) } : {}),
          files: [...new Set(files)],
        });
      }
    }
  }
  return out;
}

/** Pids of live (not zombie) ffmpeg processes whose command line mentions `marker` (for abort tests). */
export function ffmpegProcessesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const state = /^State:\s+(\w)/m.exec(readFileSync(`/proc/${entry}/status`, "utf8"))?.[1];
      if (state !== "Z" && path.basename(cmd[0] ?? "") === "ffmpeg" && cmd.some((a) => a.includes(marker))) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** Video frames of a file or playlist (a path or a URL), each decoded by ffprobe (an HLS playlist may report its stream twice: the first count). */
export async function decodedFrames(input: string): Promise<number> {
  const { stdout } = await exec("ffprobe", [
    "-v",
    "error",
    "-count_frames",
    "-select_streams",
    "v:0",
    "-show_entries",
    "stream=nb_read_frames",
    "-of",
    "csv=p=0",
    input,
  ]);
  return Number(stdout.trim().split(/\s+/)[0]);
}

/** Presentation times (seconds) of the video frames of a file or playlist, as decoded, in order. */
export async function frameTimes(input: string): Promise<number[]> {
  const { stdout } = await exec("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", input], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => Number.parseFloat(l));
}
