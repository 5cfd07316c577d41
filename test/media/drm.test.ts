// Protected streaming outputs with real ffmpeg and the real packager, without a browser: the boxes
// of every init and media segment (tenc with each track class's key ID, pssh of exactly the asked
// systems, senc in every fragment), the manifests' signalling, and round trips: the packager's own
// raw-key decryption must give the frames ffmpeg decodes cleanly, while no key or a wrong key does
// not. aes_128: every ts segment decrypts with openssl to a stream ffprobe reads, and a subtitle
// track's WebVTT segments map to the first video timestamp, read from a decrypted segment.
import { create } from "@bufbuild/protobuf";
import { execFile } from "node:child_process";
import { createDecipheriv, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { packagerPath } from "../../encoder-node/packager.js";
import { planOutput, segmentSecondsOf, type OutputPlan, type PlanOptions } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { writeTracks, type PreparedTrack } from "../../encoder-node/subtitles.js";
import { localKeyProvider } from "../../src/drm/keys.js";
import { SYSTEM_IDS, type ContentKey, type DrmSystemName, type TrackClass } from "../../src/drm/types.js";
import {
  DrmSystem,
  EncryptionScheme,
  OutputSpecSchema,
  OutputType,
  SubtitleSource,
  SubtitleTrackSchema,
  type OutputSpec,
} from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { ffprobeJson, makeTestInput, parseAttributes, parseHlsMedia, parseMpd, parseXml, readHls, type XmlElement } from "../media.js";
import { avcCodecString, findBoxes, readBoxFile, readPssh, readSchm, readTenc, sampleCount, sampleEntry } from "../mp4-boxes.js";

const exec = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "drm-spec-"));
let n = 0;
let input: { file: string; probe: ProbeResult };
const spec = (init: Parameters<typeof create<typeof OutputSpecSchema>>[1]): OutputSpec => create(OutputSpecSchema, init);
const fast = { encoderPreset: "veryfast" };
const hex = () => randomBytes(16).toString("hex");
const contentKey = (trackClass: TrackClass): ContentKey => ({ trackClass, kid: hex(), key: hex() });
const keys: Record<TrackClass, ContentKey> = { audio: contentKey("audio"), sd: contentKey("sd"), hd: contentKey("hd") };

/** Plans and runs one output with the keys given; progress must never go back and must end at 1. */
async function encode(s: OutputSpec, given: readonly ContentKey[] = Object.values(keys), opts: Partial<PlanOptions> = {}): Promise<OutputPlan> {
  const plan = planOutput(s, input, { outputId: `out_${++n}`, workDir: path.join(root, `out_${n}`), ...opts });
  const progress: number[] = [];
  await runPlan(plan, { keys: given, onProgress: (f) => progress.push(f) });
  expect(progress.every((f, i) => i === 0 || f >= progress[i - 1]!)).toBe(true);
  expect(progress.filter((f) => f === 1)).toEqual([1]);
  expect(progress.at(-1)).toBe(1);
  return plan;
}

/** Every file under a folder, relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));

interface Stream {
  init: string;
  segments: string[];
}

const hlsStreams = (plan: OutputPlan): Stream[] =>
  [...readHls(plan.dir, plan.main).playlists].map(([playlist, media]) => ({
    init: path.posix.join(path.posix.dirname(playlist), media.init!),
    segments: media.segments.map((s) => path.posix.join(path.posix.dirname(playlist), s.uri)),
  }));
const mpdStreams = (plan: OutputPlan, mpd: string): Stream[] =>
  parseMpd(readFileSync(path.join(plan.dir, mpd), "utf8")).representations.map((r) => ({ init: r.files[0]!, segments: r.files.slice(1) }));

/**
 * Checks one encrypted stream's boxes and returns its kind and key ID: a protected sample entry
 * with the scheme, tenc, pssh boxes of exactly the signalled systems in the init, and senc, saiz
 * and saio in every fragment of every media segment.
 */
function checkBoxes(dir: string, s: Stream, scheme: "cbcs" | "cenc", systems: DrmSystemName[]): { kind: "video" | "audio"; kid: string } {
  const init = readBoxFile(path.join(dir, s.init));
  const entry = sampleEntry(init)!;
  expect(["encv", "enca"]).toContain(entry.type);
  expect(readSchm(findBoxes([entry], `${entry.type}/sinf/schm`)[0]!)).toBe(scheme);
  const tenc = readTenc(findBoxes([entry], `${entry.type}/sinf/schi/tenc`)[0]!);
  expect(tenc.isProtected).toBe(true);
  if (scheme === "cbcs") {
    expect([tenc.perSampleIvSize, tenc.constantIv.length]).toEqual([0, 32]);
    if (entry.type === "encv") expect([tenc.cryptByteBlock, tenc.skipByteBlock]).toEqual([1, 9]);
  } else expect([8, 16]).toContain(tenc.perSampleIvSize);
  const pssh = findBoxes(init, "moov/pssh").map(readPssh);
  // FairPlay has no pssh: it is signalled in the HLS playlists only.
  expect(pssh.map((p) => p.systemId).sort()).toEqual(
    systems
      .filter((x) => x !== "fairplay")
      .map((x) => SYSTEM_IDS[x])
      .sort(),
  );
  for (const p of pssh.filter((x) => x.systemId === SYSTEM_IDS.clearkey)) expect(p.kids).toContain(tenc.kid);
  const kind = entry.type === "encv" ? "video" : "audio";
  // cbcs audio has neither per-sample IVs nor subsamples: its senc entries are empty, with no saiz or saio to point at them.
  const auxiliary = scheme === "cenc" || kind === "video" ? ["saiz", "saio"] : [];
  expect(s.segments.length).toBeGreaterThanOrEqual(2);
  for (const segment of s.segments) {
    const trafs = findBoxes(readBoxFile(path.join(dir, segment)), "moof/traf");
    expect(trafs.length).toBeGreaterThan(0);
    for (const traf of trafs) {
      expect(traf.children.map((c) => c.type)).toEqual(expect.arrayContaining(["senc", ...auxiliary]));
      // Every sample of the fragment is covered.
      expect(sampleCount(findBoxes([traf], "traf/senc")[0]!)).toBe(sampleCount(findBoxes([traf], "traf/trun")[0]!));
    }
  }
  return { kind, kid: tenc.kid };
}

/** Decoded frames as framemd5 lines, and ffmpeg's complaints; no frames when it fails outright. */
async function framesOf(file: string): Promise<{ frames: string; errors: string }> {
  try {
    const { stdout, stderr } = await exec("ffmpeg", ["-v", "error", "-i", file, "-f", "framemd5", "-"], { maxBuffer: 64 * 1024 * 1024 });
    return {
      frames: stdout
        .split("\n")
        .filter((l) => l !== "" && !l.startsWith("#"))
        .join("\n"),
      errors: stderr,
    };
  } catch (e) {
    return { frames: "", errors: (e as { stderr?: string }).stderr ?? String(e) };
  }
}

/** The packager's raw-key decryption of one stream (init and segments joined), decoded; no frames when it fails. */
async function decrypted(dir: string, s: Stream, kind: "video" | "audio", key: { kid: string; key: string }): Promise<{ frames: string; errors: string }> {
  const id = ++n;
  const joined = path.join(root, `enc-${id}.mp4`);
  writeFileSync(joined, Buffer.concat([s.init, ...s.segments].map((f) => readFileSync(path.join(dir, f)))));
  const flags = path.join(root, `dec-${id}.flags`);
  writeFileSync(flags, `--enable_raw_key_decryption\n--keys=label=k:key_id=${key.kid}:key=${key.key}\n`, { mode: 0o600 });
  const out = path.join(root, `dec-${id}.mp4`);
  try {
    await exec(packagerPath(), [`in=${joined},stream=${kind},output=${out}`, "--flagfile", flags, "--quiet"]);
  } catch (e) {
    return { frames: "", errors: (e as { stderr?: string }).stderr ?? String(e) };
  }
  return framesOf(out);
}

/** The right key gives frames ffmpeg decodes without a word; no key and a wrong key give other frames, or none. */
async function checkRoundTrip(dir: string, s: Stream, kind: "video" | "audio", key: ContentKey): Promise<void> {
  const right = await decrypted(dir, s, kind, key);
  expect(right.errors).toBe("");
  expect(right.frames.split("\n").length).toBeGreaterThan(10);
  const joined = path.join(root, `raw-${++n}.mp4`);
  writeFileSync(joined, Buffer.concat([s.init, ...s.segments].map((f) => readFileSync(path.join(dir, f)))));
  expect((await framesOf(joined)).frames).not.toBe(right.frames);
  expect((await decrypted(dir, s, kind, { kid: key.kid, key: hex() })).frames).not.toBe(right.frames);
}

/** ContentProtection elements of each adaptation set in an MPD, by content type. */
function contentProtection(mpd: string): Map<string, Record<string, string>[]> {
  const out = new Map<string, Record<string, string>[]>();
  const walk = (el: XmlElement) => {
    if (el.name === "AdaptationSet")
      out.set(
        el.attributes.contentType ?? "",
        el.children.filter((c) => c.name === "ContentProtection").map((c) => c.attributes),
      );
    el.children.forEach(walk);
  };
  walk(parseXml(mpd));
  return out;
}

/** No clear intermediates left in the output, and no key material beside it. */
function checkCleanedUp(plan: OutputPlan): void {
  expect(filesUnder(plan.dir).filter((f) => f.startsWith("_clear") || f.includes("flags") || f.endsWith(".key") || f.endsWith(".keyinfo"))).toEqual([]);
  expect(existsSync(`${plan.dir}.keys`)).toBe(false);
}

const keyLines = (playlist: string) =>
  playlist
    .split("\n")
    .filter((l) => l.startsWith("#EXT-X-KEY:"))
    .map((l) => parseAttributes(l.slice(11)));

beforeAll(async () => {
  const file = await makeTestInput(path.join(root, "input.mp4"), { seconds: 3, width: 320, height: 240, fps: 24, audio: true });
  input = { file, probe: await probe(file) };
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("cbcs and cenc: packaged CMAF", { timeout: 90_000 }, () => {
  it("dash cenc: ContentProtection per system with default_KID, audio and video under their own keys, round trips", async () => {
    const systems: DrmSystemName[] = ["clearkey", "widevine", "playready"];
    const plan = await encode(
      spec({
        type: OutputType.DASH,
        dash: { segmentDurationSeconds: 1, minBufferTimeSeconds: 3 },
        video: [{ codec: VideoCodec.H264, width: 320, height: 180, h264: fast }],
        audio: [{ codec: AudioCodec.AAC, language: "en" }],
        drm: { scheme: EncryptionScheme.CENC, systems: [DrmSystem.CLEARKEY, DrmSystem.WIDEVINE, DrmSystem.PLAYREADY] },
      }),
    );
    expect(plan.main).toBe("manifest.mpd");
    const text = readFileSync(path.join(plan.dir, plan.main), "utf8");
    expect(parseMpd(text)).toMatchObject({ type: "static", minBufferTimeSeconds: 3 });
    const streams = mpdStreams(plan, plan.main);
    const checked = streams.map((s) => checkBoxes(plan.dir, s, "cenc", systems));
    expect(checked).toEqual([
      { kind: "video", kid: keys.sd.kid },
      { kind: "audio", kid: keys.audio.kid },
    ]);
    const uuid = (kid: string) => kid.replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
    for (const [type, kid] of [
      ["video", keys.sd.kid],
      ["audio", keys.audio.kid],
    ] as const) {
      const elements = contentProtection(text).get(type)!;
      expect(elements.find((e) => e.schemeIdUri === "urn:mpeg:dash:mp4protection:2011")).toMatchObject({ value: "cenc", "cenc:default_KID": uuid(kid) });
      expect(
        elements
          .map((e) => e.schemeIdUri ?? "")
          .filter((u) => u.startsWith("urn:uuid:"))
          .sort(),
      ).toEqual(systems.map((x) => `urn:uuid:${SYSTEM_IDS[x]}`).sort());
    }
    await checkRoundTrip(plan.dir, streams[0]!, "video", keys.sd);
    await checkRoundTrip(plan.dir, streams[1]!, "audio", keys.audio);
    checkCleanedUp(plan);
  });

  it("adaptive cbcs: one segment set for the MPD and the HLS playlists, SD and HD and audio keys, codecs from the encrypted entries", async () => {
    const systems: DrmSystemName[] = ["clearkey", "widevine", "fairplay"];
    const plan = await encode(
      spec({
        type: OutputType.ADAPTIVE,
        segments: { segmentDurationSeconds: 1 },
        video: [
          { codec: VideoCodec.H264, width: 1280, height: 720, h264: fast },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
        ],
        drm: { systems: [DrmSystem.CLEARKEY, DrmSystem.WIDEVINE, DrmSystem.FAIRPLAY] },
      }),
    );
    expect([plan.main, plan.renditions?.map((r) => r.file)]).toEqual(["index.m3u8", ["media_0.m3u8", "media_1.m3u8"]]);
    const hls = readHls(plan.dir, plan.main);
    const dash = mpdStreams(plan, "manifest.mpd");
    const hlsFiles = hlsStreams(plan).flatMap((s) => [s.init, ...s.segments]);
    expect(dash.flatMap((s) => [s.init, ...s.segments]).filter((f) => !hlsFiles.includes(f))).toEqual([]);
    const checked = dash.map((s) => checkBoxes(plan.dir, s, "cbcs", systems));
    expect(checked).toEqual([
      { kind: "video", kid: keys.hd.kid },
      { kind: "video", kid: keys.sd.kid },
      { kind: "audio", kid: keys.audio.kid },
    ]);
    // The master is ours, its codec strings probed from the encrypted segments: they match the encv's avcC.
    const avc = dash.slice(0, 2).map((s) => avcCodecString(findBoxes(readBoxFile(path.join(plan.dir, s.init)), "moov/trak/mdia/minf/stbl/stsd/encv/avcC")[0]!));
    expect(hls.master.variants.map((v) => [v.uri, v.attributes.CODECS, v.attributes.RESOLUTION])).toEqual([
      ["media_0.m3u8", `${avc[0]},mp4a.40.2`, "1280x720"],
      ["media_1.m3u8", `${avc[1]},mp4a.40.2`, "320x180"],
    ]);
    expect(Number(hls.master.variants[0]!.attributes.BANDWIDTH)).toBeGreaterThan(Number(hls.master.variants[1]!.attributes.BANDWIDTH));
    for (const [playlist, kid] of [
      ["media_0.m3u8", keys.hd.kid],
      ["media_2.m3u8", keys.audio.kid],
    ] as const) {
      const lines = keyLines(readFileSync(path.join(plan.dir, playlist), "utf8"));
      expect(lines.every((l) => l.METHOD === "SAMPLE-AES")).toBe(true);
      expect(lines.map((l) => l.KEYFORMAT)).toEqual([
        "identity",
        "org.w3.clearkey",
        "urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed",
        "com.apple.streamingkeydelivery",
      ]);
      expect(lines[0]!.URI).toBe(`drm/${kid}.key`);
      expect(lines[1]!.URI).toBe(`data:text/plain;base64,${Buffer.from(kid, "hex").toString("base64")}`);
    }
    const mpd = contentProtection(readFileSync(path.join(plan.dir, "manifest.mpd"), "utf8"));
    expect(
      mpd
        .get("video")!
        .map((e) => e.schemeIdUri ?? "")
        .filter((u) => u.startsWith("urn:uuid:"))
        .sort(),
    ).toEqual([SYSTEM_IDS.clearkey, SYSTEM_IDS.widevine].map((id) => `urn:uuid:${id}`).sort());
    await checkRoundTrip(plan.dir, dash[0]!, "video", keys.hd);
    checkCleanedUp(plan);
  });

  it("hls fmp4 cbcs, one process per rendition: the clear layout's names, SAMPLE-AES playlists, round trips", async () => {
    const plan = await encode(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 1, segmentFormat: SegmentFormat.FMP4 },
        video: [
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
          { codec: VideoCodec.H264, width: 160, height: 90, h264: fast },
        ],
        audio: [{ codec: AudioCodec.AAC, language: "pt-BR", name: "Português" }],
        drm: { scheme: EncryptionScheme.CBCS, systems: [DrmSystem.CLEARKEY] },
      }),
      [keys.audio, keys.sd],
      { strategy: "per-rendition" },
    );
    expect(plan.commands.length).toBe(3);
    const hls = readHls(plan.dir, plan.main);
    expect(hls.master.variants.map((v) => v.uri)).toEqual(["320x180/index.m3u8", "160x90/index.m3u8"]);
    expect(hls.master.media).toEqual([expect.objectContaining({ URI: "audio_0/index.m3u8", NAME: "Português", LANGUAGE: "pt-BR" })]);
    const streams = hlsStreams(plan);
    expect(streams.map((s) => s.init)).toEqual(["320x180/init.mp4", "160x90/init.mp4", "audio_0/init.mp4"]);
    expect(streams.map((s) => checkBoxes(plan.dir, s, "cbcs", ["clearkey"]).kid)).toEqual([keys.sd.kid, keys.sd.kid, keys.audio.kid]);
    for (const [playlist, media] of hls.playlists) {
      expect([media.endList, media.playlistType]).toEqual([true, "VOD"]);
      const lines = keyLines(readFileSync(path.join(plan.dir, playlist), "utf8"));
      expect(lines.map((l) => [l.METHOD, l.KEYFORMAT])).toEqual([
        ["SAMPLE-AES", "identity"],
        ["SAMPLE-AES", "org.w3.clearkey"],
      ]);
    }
    await checkRoundTrip(plan.dir, streams[1]!, "video", keys.sd);
    await checkRoundTrip(plan.dir, streams[2]!, "audio", keys.audio);
    checkCleanedUp(plan);
  });

  it("fails before encoding without the key of a track class; a failing packager's words come back, keys blanked, nothing left", async () => {
    const s = spec({ type: OutputType.DASH, audio: [{ codec: AudioCodec.AAC }], drm: { systems: [DrmSystem.CLEARKEY] } });
    const keyless = planOutput(s, input, { outputId: "out_nokey", workDir: path.join(root, "out_nokey") });
    await expect(runPlan(keyless, { keys: [keys.sd] })).rejects.toMatchObject({
      name: "MediaError",
      code: "internal",
      message: "no content key for the audio streams",
    });
    expect(readdirSync(keyless.dir)).toEqual([]);
    // A stand-in packager that fails the way the real one does with a --keys it cannot parse: it prints them.
    const fake = path.join(root, "failing-packager.sh");
    writeFileSync(
      fake,
      '#!/bin/sh\nwhile [ "$1" != --flagfile ]; do shift; done\necho "E1125 06:27:26.841962   14231 packager_main.cc:260] Failed to parse $(tail -n 1 "$2")" >&2\nexit 3\n',
      { mode: 0o700 },
    );
    process.env.MEDIA_PACKAGER = fake;
    try {
      const plan = planOutput(s, input, { outputId: "out_failing", workDir: path.join(root, "out_failing") });
      const failure = await runPlan(plan, { keys: [keys.audio] }).catch((e: unknown) => e as Error);
      expect(failure).toMatchObject({
        name: "MediaError",
        code: "internal",
        message: `the packager failed (3): Failed to parse --keys=label=audio:key_id=${keys.audio.kid}:key=<key>`,
      });
      checkCleanedUp(plan);
    } finally {
      delete process.env.MEDIA_PACKAGER;
    }
  });
});

describe("aes_128: ts segments encrypted by ffmpeg", { timeout: 90_000 }, () => {
  /**
   * Whether bytes are a ts stream: the sync byte 0x47 opens each of the first four 188-byte packets.
   * One byte alone would not do: an encrypted segment opens with 0x47 once in 256.
   */
  const isTs = (b: Buffer) => b.length >= 4 * 188 && [0, 188, 376, 564].every((at) => b[at] === 0x47);

  /** openssl's decryption of a segment into a file of its own; undefined when openssl refuses (a wrong key's padding). */
  const decrypt = async (file: string, key: string, iv: string): Promise<string | undefined> => {
    const out = path.join(root, `clear-${++n}.ts`);
    try {
      await exec("openssl", ["aes-128-cbc", "-d", "-K", key, "-iv", iv, "-in", file, "-out", out]);
      return out;
    } catch {
      return undefined;
    }
  };

  it("every segment decrypts with the key and the playlist's IV to a ts stream; a wrong key does not", async () => {
    const key: ContentKey = { ...keys.sd, iv: hex() };
    const plan = await encode(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 1 },
        video: [
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
          { codec: VideoCodec.H264, width: 160, height: 90, h264: fast },
        ],
        drm: {},
      }),
      [key],
      { strategy: "per-rendition" },
    );
    expect(plan.commands.every((c) => c[c.indexOf("-hls_key_info_file") + 1] === plan.aes128?.keyInfoFile)).toBe(true);
    const hls = readHls(plan.dir, plan.main);
    // The master's codecs come from a decrypted segment: ffprobe cannot read an encrypted one.
    expect(hls.master.variants.map((v) => v.attributes.CODECS)).toEqual([
      expect.stringMatching(/^avc1\.[0-9A-F]{6},mp4a\.40\.2$/),
      expect.stringMatching(/^avc1\.[0-9A-F]{6},mp4a\.40\.2$/),
    ]);
    for (const playlist of hls.playlists.keys()) {
      const text = readFileSync(path.join(plan.dir, playlist), "utf8");
      expect(keyLines(text)).toEqual([{ METHOD: "AES-128", URI: `drm/${key.kid}.key`, IV: `0x${key.iv}` }]);
      const media = parseHlsMedia(text);
      expect(media.segments.length).toBeGreaterThanOrEqual(3);
      for (const s of media.segments) {
        const file = path.join(plan.dir, path.dirname(playlist), s.uri);
        expect(isTs(readFileSync(file))).toBe(false);
        const clear = await decrypt(file, key.key, key.iv!);
        expect(clear && isTs(readFileSync(clear))).toBe(true);
        const probed = await ffprobeJson(clear!);
        expect(probed.format.format_name).toBe("mpegts");
        expect(probed.streams.length).toBeGreaterThan(0);
        const wrong = await decrypt(file, hex(), key.iv!);
        expect(wrong !== undefined && isTs(readFileSync(wrong))).toBe(false);
      }
    }
    checkCleanedUp(plan);
  });

  it("a subtitle track: its WebVTT segments map to the first video timestamp, read from a decrypted segment; the master lists it on every variant", async () => {
    const [key] = await localKeyProvider().keys({ resourceId: "out_subs", classes: ["sd"], scheme: "aes128", systems: [] });
    const s = spec({
      type: OutputType.HLS,
      hls: { segmentDurationSeconds: 1 },
      video: [
        { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
        { codec: VideoCodec.H264, width: 160, height: 90, h264: fast },
      ],
      drm: {},
    });
    const plan = await encode(s, [key!]);
    const track: PreparedTrack = {
      index: 0,
      source: "url",
      language: "en",
      name: "English",
      track: create(SubtitleTrackSchema, { source: SubtitleSource.URL, language: "en", isDefault: true }),
      cues: [{ start: 0.5, end: 2, text: "Under lock and key" }],
    };
    const { files } = await writeTracks(plan, [track], segmentSecondsOf(s), new AbortController().signal);
    expect(files).toEqual([{ index: 0, file: "subtitles/track_0.vtt" }]);
    const hls = readHls(plan.dir, plan.main);
    // The first video timestamp, found here on our own: the first segment decrypted with the key and the playlist's IV, probed.
    const videoPlaylist = hls.master.variants[0]!.uri;
    const text = readFileSync(path.join(plan.dir, videoPlaylist), "utf8");
    const iv = keyLines(text)[0]!.IV!.replace(/^0x/, "");
    const first = path.join(plan.dir, path.dirname(videoPlaylist), parseHlsMedia(text).segments[0]!.uri);
    const decipher = createDecipheriv("aes-128-cbc", Buffer.from(key!.key, "hex"), Buffer.from(iv, "hex"));
    const clear = path.join(root, `first-${++n}.ts`);
    writeFileSync(clear, Buffer.concat([decipher.update(readFileSync(first)), decipher.final()]));
    const { stdout } = await exec("ffprobe", ["-v", "error", "-print_format", "json", "-show_entries", "format=start_time", clear]);
    const mpegts = Math.round(Number((JSON.parse(stdout) as { format: { start_time: string } }).format.start_time) * 90_000);
    expect(mpegts).toBeGreaterThan(0);
    const subtitles = hls.playlists.get("subtitles/track_0/index.m3u8");
    expect(subtitles?.segments.length).toBeGreaterThanOrEqual(3);
    for (const segment of subtitles!.segments) {
      const vtt = readFileSync(path.join(plan.dir, "subtitles/track_0", segment.uri), "utf8");
      expect(vtt.split("\n").slice(0, 2)).toEqual(["WEBVTT", `X-TIMESTAMP-MAP=MPEGTS:${mpegts},LOCAL:00:00:00.000`]);
    }
    expect(hls.master.media.filter((m) => m.TYPE === "SUBTITLES")).toEqual([
      expect.objectContaining({ TYPE: "SUBTITLES", "GROUP-ID": "subs", LANGUAGE: "en", URI: "subtitles/track_0/index.m3u8" }),
    ]);
    expect(hls.master.variants.length).toBe(2);
    for (const v of hls.master.variants)
      expect(v.attributes).toMatchObject({ SUBTITLES: "subs", CODECS: expect.stringMatching(/^avc1\.[0-9A-F]{6},mp4a\.40\.2$/) });
    checkCleanedUp(plan);
  });

  it("writes a random IV when the key has none, and fails without a key", async () => {
    const s = spec({
      type: OutputType.HLS,
      hls: { segmentDurationSeconds: 1 },
      video: [{ codec: VideoCodec.H264, width: 160, height: 90, h264: fast }],
      disableAudio: true,
      drm: {},
    });
    const plan = await encode(s, [keys.sd]);
    const lines = keyLines(readFileSync(path.join(plan.dir, "160x90/index.m3u8"), "utf8"));
    expect(lines).toEqual([{ METHOD: "AES-128", URI: `drm/${keys.sd.kid}.key`, IV: expect.stringMatching(/^0x[0-9a-f]{32}$/) }]);
    checkCleanedUp(plan);
    const keyless = planOutput(s, input, { outputId: "out_keyless", workDir: path.join(root, "out_keyless") });
    await expect(runPlan(keyless, {})).rejects.toMatchObject({
      code: "internal",
      message: "the output is encrypted with aes_128, but no content key was given",
    });
    expect(existsSync(path.join(root, "out_keyless", "160x90"))).toBe(false);
  });
});
