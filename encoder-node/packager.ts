// Content protection on the encoder node: Shaka Packager encrypts a plan's clear intermediates into
// CMAF segments with cbcs or cenc and writes the MPD and HLS media playlists; for aes_128 on ts
// HLS, ffmpeg encrypts itself with the key info file written here. Keys never reach a command line.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { HEX16, type ContentKey, type DrmSystemName, type TrackClass } from "../src/drm/types.js";
import { MediaError } from "./media-errors.js";
import type { PackagedStream, PackagingPlan } from "./plan.js";

/**
 * The packager binary: MEDIA_PACKAGER, else the one the shaka-packager package ships. Its JS
 * wrapper exits 0 when the packager fails, so the binary is run directly.
 */
export const packagerPath = () =>
  process.env.MEDIA_PACKAGER ||
  path.join(import.meta.dirname, "..", "node_modules", "shaka-packager", "bin", `packager-linux-${process.arch === "arm64" ? "arm64" : "x64"}`);

const PROTECTION_SYSTEMS: Record<DrmSystemName, string> = { clearkey: "CommonSystem", widevine: "Widevine", playready: "PlayReady", fairplay: "FairPlay" };

/**
 * Where a media playlist names a raw key: relative, so it resolves beside the playlist, where the
 * edge serves the output's keys behind the same token as the media.
 */
const keyUri = (kid: string) => `drm/${kid}.key`;

const STDERR_LINES = 5;

function checkKey(key: ContentKey): void {
  if (!HEX16.test(key.kid) || !HEX16.test(key.key) || (key.iv !== undefined && !HEX16.test(key.iv)))
    throw new MediaError("internal", `the ${key.trackClass} content key is not 16-byte lowercase hex`);
}

/** Each stream with the key of its track class; a missing class is a bug of whoever asked for the keys. */
function keysFor(p: PackagingPlan, keys: readonly ContentKey[]): { stream: PackagedStream; key: ContentKey }[] {
  return p.streams.map((stream) => {
    const key = keys.find((k) => k.trackClass === stream.trackClass);
    if (!key) throw new MediaError("internal", `no content key for the ${stream.trackClass} streams`);
    checkKey(key);
    return { stream, key };
  });
}

/** Fails when a stream's track class has no usable key: checked before the encode, which would be wasted. */
export function checkPackagingKeys(p: PackagingPlan, keys: readonly ContentKey[]): void {
  keysFor(p, keys);
}

/** The flag file: the raw keys, labelled by track class (each stream's drm_label). */
export function packagerFlags(keys: ReadonlyMap<TrackClass, ContentKey>): string {
  const list = [...keys].map(([label, k]) => `label=${label}:key_id=${k.kid}:key=${k.key}`).join(",");
  return `--enable_raw_key_encryption\n--keys=${list}\n`;
}

/** The packager's command line, run in the plan's dir: stream descriptors (paths relative to it) and options; the keys are in the flag file. */
export function packagerArgs(p: PackagingPlan, flagFile: string): string[] {
  const descriptors = p.streams.map((s) =>
    [
      `in=${path.relative(p.dir, s.input)}`,
      `stream=${s.kind}`,
      // Without a segment template the packager writes one file, addressed by byte ranges.
      s.segmentTemplate ? `init_segment=${s.init},segment_template=${s.segmentTemplate}` : `output=${s.init}`,
      ...(s.playlist ? [`playlist_name=${s.playlist}`] : []),
      `drm_label=${s.trackClass}`,
      ...(s.language ? [`language=${s.language}`] : []),
    ].join(","),
  );
  return [
    ...descriptors,
    "--flagfile",
    flagFile,
    "--protection_scheme",
    p.scheme,
    "--protection_systems",
    p.systems.map((s) => PROTECTION_SYSTEMS[s]).join(","),
    // The default leaves the first 5 s in the clear.
    "--clear_lead",
    "0",
    "--segment_duration",
    String(p.segmentSeconds),
    // Segment templates make a dynamic MPD otherwise; the encode is finished.
    ...(p.mpd ? ["--mpd_output", p.mpd, "--generate_static_live_mpd"] : []),
    ...(p.hls ? ["--hls_master_playlist_output", p.hls.master, "--hls_playlist_type", p.hls.playlistType] : []),
    "--quiet",
  ];
}

/** The cause the packager printed: its last lines without glog's prefix, keys blanked (it echoes a --keys it cannot parse). */
function failureReason(stderr: string, keys: readonly ContentKey[]): string {
  const lines = stderr
    .split("\n")
    .map((l) => l.replace(/^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] /, "").trim())
    .filter((l) => l !== "");
  let reason = lines.slice(-STDERR_LINES).join("\n");
  for (const k of keys) reason = reason.replaceAll(new RegExp(k.key, "gi"), "<key>");
  return reason;
}

function runBinary(args: string[], cwd: string, keys: readonly ContentKey[], signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new MediaError("canceled", "packaging canceled"));
    const binary = packagerPath();
    const child = spawn(binary, args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-16_384)));
    // It runs for a fraction of a second and starts nothing of its own: killing it is enough.
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    child.once("error", (e: NodeJS.ErrnoException) => {
      signal?.removeEventListener("abort", onAbort);
      reject(new MediaError("internal", e.code === "ENOENT" ? `Shaka Packager is not installed at ${binary}` : `the packager could not start: ${e.message}`));
    });
    child.once("close", (code, sig) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) return reject(new MediaError("canceled", "packaging canceled"));
      if (code === 0) return resolve();
      reject(new MediaError("internal", `the packager failed (${code ?? sig}): ${failureReason(stderr, keys) || "no message"}`));
    });
  });
}

/**
 * The packager's media playlists made playable and complete. ClearKey: it writes the CommonSystem
 * key as KEYFORMAT="identity" with the key ID as a data URI, but Shaka Player reads an identity
 * URI as the key itself (fetched, or inline), so the URI becomes the key's relative address; and
 * an org.w3.clearkey line carrying the key ID is added for hls.js, which Shaka skips. EVENT: the
 * packager leaves the playlist open, but the encode is finished.
 */
export function finishMediaPlaylist(text: string, key: ContentKey): string {
  const kid = Buffer.from(key.kid, "hex").toString("base64");
  const lines = text.split("\n").flatMap((line) => {
    if (!line.startsWith("#EXT-X-KEY:") || !line.includes('KEYFORMAT="identity"')) return [line];
    const method = /METHOD=([A-Z0-9-]+)/.exec(line)?.[1] ?? "SAMPLE-AES";
    return [
      `#EXT-X-KEY:METHOD=${method},URI="${keyUri(key.kid)}",KEYFORMAT="identity"`,
      `#EXT-X-KEY:METHOD=${method},URI="data:text/plain;base64,${kid}",KEYFORMAT="org.w3.clearkey",KEYFORMATVERSIONS="1"`,
    ];
  });
  const body = lines.join("\n").trimEnd();
  return `${body.endsWith("#EXT-X-ENDLIST") ? body : `${body}\n#EXT-X-ENDLIST`}\n`;
}

/**
 * Packages a plan's clear intermediates with the keys of its track classes (each stream's key by
 * its class). Throws MediaError("internal") with the packager's own words when it fails. The
 * intermediates and the flag file are gone afterwards, whatever happened.
 */
export async function runPackager(p: PackagingPlan, keys: readonly ContentKey[], opts: { signal?: AbortSignal }): Promise<void> {
  try {
    const streams = keysFor(p, keys);
    const byClass = new Map(streams.map(({ stream, key }) => [stream.trackClass, key]));
    const flagFile = path.join(p.secretsDir, "packager.flags");
    await mkdir(p.secretsDir, { recursive: true, mode: 0o700 });
    await writeFile(flagFile, packagerFlags(byClass), { mode: 0o600 });
    await runBinary(packagerArgs(p, flagFile), p.dir, [...byClass.values()], opts.signal);
    for (const { stream, key } of streams) {
      if (!stream.playlist) continue;
      const file = path.join(p.dir, stream.playlist);
      await writeFile(file, finishMediaPlaylist(await readFile(file, "utf8"), key));
    }
  } finally {
    await rm(p.clearDir, { recursive: true, force: true });
    await rm(p.secretsDir, { recursive: true, force: true });
  }
}

/**
 * aes_128: ffmpeg's key info file (key URI for the playlists, key file, IV) and the 16 key bytes
 * beside it, both readable by this user only. The IV is the key's own, else 16 random bytes, so
 * the playlists carry an explicit IV.
 */
export async function writeAes128KeyInfo(file: string, key: ContentKey): Promise<void> {
  checkKey(key);
  const dir = path.dirname(file);
  const keyFile = path.join(dir, `${key.kid}.key`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(keyFile, Buffer.from(key.key, "hex"), { mode: 0o600 });
  await writeFile(file, `${keyUri(key.kid)}\n${keyFile}\n${key.iv ?? randomBytes(16).toString("hex")}\n`, { mode: 0o600 });
}

/** Removes what writeAes128KeyInfo wrote: the key info file's folder is the output's own key folder (plan.ts). */
export async function removeAes128KeyInfo(file: string): Promise<void> {
  await rm(path.dirname(file), { recursive: true, force: true });
}
