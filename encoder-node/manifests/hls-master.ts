// The HLS multivariant playlist, written from the plan plus the facts (hls-facts.ts): measured
// bandwidths (RFC 8216's peak segment bit rate), codec strings from the segments where not
// reported, subtitle renditions, session data and I-frame playlists. The one writer of every HLS
// master: the growing one of a progressive stream, the final one, a split ladder's after its join.
import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ContentKey } from "../../src/drm/types.js";
import { peakSegmentBitRate, type MeasuredSegment } from "../bandwidth.js";
import { writeIFramePlaylist } from "./iframes.js";
import { MediaError } from "../media-errors.js";
import type { HlsMasterPlan, OutputPlan } from "../plan.js";
import { readAes128Codecs } from "./aes128-codecs.js";
import { hlsFactsOf, type HlsFacts } from "./hls-facts.js";
import { parseMediaPlaylist, playlistCodecString } from "./media-playlist.js";

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
 * A progressive plan's master while it encodes: the variants whose media playlists are given
 * (the first rung, then every rung once the others are complete), measured on the segments
 * written so far; no subtitles, no I-frame playlists yet. The final master is written whole, at the end.
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
  const facts = hlsFactsOf(m);
  const listed = new Set(playlists);
  // I-frame playlists are written with the whole master, from complete media playlists.
  const variants = m.variants.filter((v) => listed.has(v.playlist)).map(({ iframes: _, ...v }) => v);
  const partial: HlsMasterPlan = { ...m, variants };
  // aes_128: codecs are read from a decrypted first segment, and kept as facts for the final master.
  if (plan.aes128 && key) await readAes128Codecs(plan.dir, partial, facts, key, path.dirname(plan.aes128.keyInfoFile), signal);
  await writeHlsMaster(plan.dir, partial, signal, file, facts, { subtitles: false });
}

const quoted = (s: string) => `"${s.replace(/["\r\n]/g, "'")}"`;

/** Writes the multivariant playlist from what was produced: measured bandwidths, probed codecs. */
export async function writeHlsMaster(
  dir: string,
  m: HlsMasterPlan,
  signal: AbortSignal,
  to = path.join(dir, m.file),
  facts: HlsFacts = hlsFactsOf(m),
  listed: { readonly subtitles: boolean } = { subtitles: true },
): Promise<void> {
  const known = (playlist: string) => facts.codecs.get(playlist);
  const audio = await Promise.all(m.audio.map(async (a) => ({ ...a, ...(await measure(dir, a.playlist, known(a.playlist), signal, facts.storedBytes)) })));
  const variants = await Promise.all(
    m.variants.map(async (v) => ({ ...v, ...(await measure(dir, v.playlist, known(v.playlist), signal, facts.storedBytes)) })),
  );
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
  const subtitles = listed.subtitles ? (facts.subtitles ?? []) : [];
  for (const s of subtitles) {
    const attrs = [`TYPE=SUBTITLES`, `GROUP-ID=${quoted(s.groupId)}`, `NAME=${quoted(s.name)}`];
    if (s.language) attrs.push(`LANGUAGE=${quoted(s.language)}`);
    attrs.push(`DEFAULT=${s.isDefault ? "YES" : "NO"}`, `AUTOSELECT=${s.isDefault || !s.forced ? "YES" : "NO"}`, `FORCED=${s.forced ? "YES" : "NO"}`);
    if (s.captions) attrs.push(`CHARACTERISTICS=${quoted("public.accessibility.transcribes-spoken-dialog,public.accessibility.describes-music-and-sound")}`);
    attrs.push(`URI=${quoted(s.playlist)}`);
    lines.push(`#EXT-X-MEDIA:${attrs.join(",")}`);
  }
  for (const d of listed.subtitles ? (facts.sessionData ?? []) : [])
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
    const rates = facts.iframeRates.get(iframes.playlist) ?? (await writeIFramePlaylist(dir, v.playlist));
    facts.iframeRates.set(iframes.playlist, rates);
    const attrs = [
      `BANDWIDTH=${rates.peak}`,
      `AVERAGE-BANDWIDTH=${rates.average}`,
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
