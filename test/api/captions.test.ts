// Subtitle tracks end to end: real speech (espeak-ng) transcribed by the recogniser worker on the
// encoder node, provided SRT and WebVTT files from an HTTPS server and the input origin, packaged
// into HLS, DASH and MP4 outputs in a real S3-compatible server, with their results, chapters and
// money on the job. Runs against both deployments.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3Blob } from "../../src/blob/index.js";
import { NetGuard } from "../../src/net-guard.js";
import { call, createS3Origin, errorDetails, ok, startHarness, waitForJob, type Auth, type Harness } from "../harness.js";
import { parseHlsMaster, parseHlsMedia, parseXml, type XmlElement } from "../media.js";
import { makeTestCa, startHttpsPeer, startMinio, type HttpsPeer, type MinioPeer } from "../peers.js";
import { synthesizeSpeech, wordErrorRate, type Speech } from "../speech.js";
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
let h: Harness;
let minio: MinioPeer;
let web: HttpsPeer;
let key: Auth;
let work: string;
let speech: Speech;
let bucketIn: S3Blob;
let bucketOut: S3Blob;
let inputOrigin: string;
let outputOrigin: string;

const SRT = "1\r\n00:00:01,000 --> 00:00:03,500\r\n<i>Les volcans</i> & la lave\r\n\r\n2\r\n00:00:20,250 --> 00:00:22,000\r\nLe pain\r\n";

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "media-captions-"));
  speech = await synthesizeSpeech(work);
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x180:rate=25:duration=3",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    path.join(work, "silent.mp4"),
  ]);
  writeFileSync(path.join(work, "fr.srt"), SRT);
  writeFileSync(path.join(work, "binary.srt"), Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0, 7, 8].flatMap((b) => Array(50).fill(b))));
  writeFileSync(path.join(work, "huge.vtt"), `WEBVTT\n\n${"00:00:01.000 --> 00:00:02.000\nline\n\n".repeat(80_000)}`);
  const ca = makeTestCa();
  minio = await startMinio(ca, ["media-in", "media-out"]);
  web = await startHttpsPeer(ca, (req, res) => {
    try {
      const data = readFileSync(path.join(work, path.basename(req.url ?? "/")));
      res.writeHead(200, { "content-length": data.length }).end(data);
    } catch {
      res.writeHead(404).end();
    }
  });
  h = await startHarness({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_S3_ENDPOINT: minio.endpoint, MEDIA_TLS_CA_FILE: ca.caFile });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  const guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
  const at = (bucket: string) =>
    new S3Blob(
      {
        scheme: "s3",
        bucket,
        region: "us-east-1",
        endpoint: minio.endpoint,
        accessKeyId: minio.admin.accessKeyId,
        secretAccessKey: minio.admin.secretAccessKey,
      },
      guard,
    );
  bucketIn = at("media-in");
  bucketOut = at("media-out");
  await bucketIn.put("talks/speech.mp4", speech.mp4, "video/mp4");
  await bucketIn.put("talks/silent.mp4", path.join(work, "silent.mp4"), "video/mp4");
  writeFileSync(path.join(work, "de.vtt"), "WEBVTT\n\nNOTE provided in the input origin\n\n00:02.000 --> 00:04.000\nVulkane\n");
  await bucketIn.put("talks/subs/de.vtt", path.join(work, "de.vtt"), "text/vtt");
  const origin = (name: string, bucket: string, permissions: string[]) => createS3Origin(h.base, key, minio, name, bucket, permissions);
  inputOrigin = await origin("inputs", "media-in", ["read"]);
  outputOrigin = await origin("outputs", "media-out", ["read", "write"]);
}, 240_000);

afterAll(async () => {
  await h?.server.close();
  await web?.stop();
  await minio?.stop();
});

const waitFor = (id: string, ms = 220_000) => waitForJob(h.base, id, key, { ms });

/** An object of the output bucket, by its s3:// URL or key. */
async function out(urlOrKey: string): Promise<string> {
  const key = urlOrKey.replace(/^s3:\/\/media-out\//, "");
  const file = path.join(work, `out_${key.replace(/\//g, "_")}`);
  await bucketOut.getToFile(key, file);
  return readFileSync(file, "utf8");
}

const cueTimes = (vtt: string) =>
  [...vtt.matchAll(/(\d+):(\d\d):(\d\d\.\d{3}) --> (\d+):(\d\d):(\d\d\.\d{3})/g)].map((m) => ({
    start: Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]),
    end: Number(m[4]) * 3600 + Number(m[5]) * 60 + Number(m[6]),
  }));
const find = (e: XmlElement, name: string): XmlElement[] => [...(e.name === name ? [e] : []), ...e.children.flatMap((c) => find(c, name))];

describe("subtitle tracks", () => {
  it("captions HLS, DASH and MP4 outputs: a generated English track with chapters, a detected one, a provided SRT and an origin WebVTT", async () => {
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "talks/speech.mp4",
          output_origin_id: outputOrigin,
          outputs: [
            {
              type: "hls",
              video: [{ codec: "h264", width: 320, height: 180 }],
              audio: [{ codec: "aac", bitrate_kbps: 64 }],
              subtitle_tracks: [
                { source: "generated", language: "en", kind: "captions", is_default: true, generate_chapters: true },
                { source: "url", url: `${web.url}/fr.srt`, language: "fr", name: "Français" },
              ],
            },
            { type: "dash", video: [{ codec: "h264", width: 320, height: 180 }], subtitle_tracks: [{ source: "generated" }] },
            {
              type: "mp4",
              video: [{ codec: "h264", width: 320, height: 180 }],
              subtitle_tracks: [{ source: "url", url: "talks/subs/de.vtt", language: "de" }],
            },
          ],
        },
        key,
      ),
    );
    const job = await waitFor(created.job.id);
    expect(job.status, JSON.stringify(job.outputs.map((o: any) => o.error_message))).toBe("completed");

    // Results: one per track, in output order; generated tracks carry their transcript.
    const results = job.subtitle_results as any[];
    expect(results.map((r) => [r.output_id, r.track_index, r.source, r.language])).toEqual([
      [job.outputs[0].id, 0, "generated", "en"],
      [job.outputs[0].id, 1, "url", "fr"],
      [job.outputs[1].id, 0, "generated", "en"],
      [job.outputs[2].id, 0, "url", "de"],
    ]);
    expect(results[1].name).toBe("Français");
    expect(results[0].name).toBe("English");
    for (const r of results) expect(r.url).toMatch(/^s3:\/\/media-out\/.+\.vtt$/);
    for (const r of [results[0], results[2]]) {
      const said = r.transcript.map((s: any) => s.text).join(" ");
      expect(wordErrorRate(speech.text, said)).toBeLessThan(0.15);
      for (const s of r.transcript) expect(s.end_seconds).toBeGreaterThan(s.start_seconds);
    }
    expect(results[1].transcript).toEqual([]);

    // Chapters: three, split where the topics change (within a sentence's pause and a bit).
    expect(job.chapter_results).toHaveLength(1);
    const chapters = job.chapter_results[0].chapters as any[];
    expect(chapters).toHaveLength(3);
    expect(Math.abs(chapters[1].start_seconds - speech.topicStarts[1]!)).toBeLessThan(1.5);
    expect(Math.abs(chapters[2].start_seconds - speech.topicStarts[2]!)).toBeLessThan(1.5);
    for (const c of chapters) expect(c.title.length).toBeGreaterThan(0);
    expect(await out(job.chapter_results[0].url)).toMatch(/^WEBVTT\n\n(.|\n)*00:00:00\.000 --> /);

    // Money: one transcription fee per generated track, per second begun, in the estimate and the actuals.
    const seconds = Math.ceil(Number(job.input_metadata.duration_ms) / 1000);
    const fees = (job.fees as any[]).filter((f) => f.fee_type === "transcription");
    expect(fees).toHaveLength(2);
    for (const f of fees) expect(f).toMatchObject({ unit: "second", quantity: seconds, rate: 0.00005, currency: "EUR" });
    expect(fees[0].amount).toBeCloseTo(seconds * 0.00005, 9);
    const feeLines = (job.cost_breakdown.lines as any[]).filter((l) => fees.some((f) => f.id === l.reference_id));
    expect(feeLines.map((l) => [l.estimated_amount_eur, l.actual_amount_eur])).toEqual(fees.map((f) => [f.amount, f.amount]));
    const micros = (x: number) => Math.round(x * 1e6);
    expect((job.cost_breakdown.lines as any[]).reduce((s, l) => s + micros(l.actual_amount_eur), 0)).toBe(micros(job.total_actual_cost));

    // HLS: the master lists both tracks as subtitle renditions, and every variant names the group.
    const hlsKey = job.outputs[0].output_url.replace(/^s3:\/\/media-out\//, "");
    const base = hlsKey.slice(0, hlsKey.lastIndexOf("/") + 1);
    const master = parseHlsMaster(await out(hlsKey));
    const subs = master.media.filter((m) => m.TYPE === "SUBTITLES");
    expect(subs.map((m) => [m.LANGUAGE, m.NAME, m.DEFAULT])).toEqual([
      ["en", "English", "YES"],
      ["fr", "Français", "NO"],
    ]);
    expect(subs[0]!.CHARACTERISTICS).toContain("public.accessibility.transcribes-spoken-dialog");
    for (const v of master.variants) expect(v.attributes.SUBTITLES).toBe(subs[0]!["GROUP-ID"]);
    // The chapters as Apple's session data: one entry per chapter, titled in the track's language.
    const session = /#EXT-X-SESSION-DATA:DATA-ID="com\.apple\.hls\.chapters",URI="([^"]+)",LANGUAGE="en"/.exec(await out(hlsKey));
    expect(session).not.toBeNull();
    const apple = JSON.parse(await out(base + session![1]!));
    expect(apple.map((c: any) => [c.chapter, c["start-time"], c.titles[0].title])).toEqual(chapters.map((c, i) => [i + 1, c.start_seconds, c.title]));
    // Segmented WebVTT whose X-TIMESTAMP-MAP is where the video's timestamps start.
    const videoMedia = parseHlsMedia(await out(base + master.variants[0]!.uri));
    const firstTs = path.join(work, "first.ts");
    await bucketOut.getToFile(path.posix.join(base, path.posix.dirname(master.variants[0]!.uri), videoMedia.segments[0]!.uri), firstTs);
    const { stdout } = await run("ffprobe", ["-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", firstTs]);
    const subMediaPath = base + subs[0]!.URI!;
    const subMedia = parseHlsMedia(await out(subMediaPath));
    expect(subMedia.endList).toBe(true);
    expect(subMedia.segments.length).toBeGreaterThan(1);
    const segments = await Promise.all(subMedia.segments.map((s) => out(path.posix.join(path.posix.dirname(subMediaPath), s.uri))));
    for (const s of segments) expect(s).toContain(`X-TIMESTAMP-MAP=MPEGTS:${Math.round(Number(stdout.trim()) * 90_000)},LOCAL:00:00:00.000`);
    const spoken = cueTimes(segments.join("\n"));
    expect(spoken.length).toBeGreaterThan(5);
    expect(Math.max(...spoken.map((c) => c.end))).toBeLessThanOrEqual(speech.durationSeconds + 0.5);
    // The provided SRT became WebVTT: same times, tags kept, & escaped.
    const french = await out(results[1].url);
    expect(french).toContain("00:00:01.000 --> 00:00:03.500\n<i>Les volcans</i> &amp; la lave");
    expect(cueTimes(french)).toEqual([
      { start: 1, end: 3.5 },
      { start: 20.25, end: 22 },
    ]);

    // DASH: a text adaptation set whose file is there.
    const mpd = parseXml(await out(job.outputs[1].output_url));
    const text = find(mpd, "AdaptationSet").filter((a) => a.attributes.mimeType === "text/vtt");
    expect(text).toHaveLength(1);
    expect(text[0]!.attributes.lang).toBe("en");
    const mpdKey = job.outputs[1].output_url.replace(/^s3:\/\/media-out\//, "");
    const baseUrl = readBaseUrl(await out(mpdKey));
    expect(await out(mpdKey.slice(0, mpdKey.lastIndexOf("/") + 1) + baseUrl)).toMatch(/^WEBVTT/);

    // MP4: a sidecar WebVTT beside the file, read from the input origin.
    expect(cueTimes(await out(results[3].url))).toEqual([{ start: 2, end: 4 }]);
  });

  it("fails an output with a documented error_code for a corrupt, oversized or missing provided file, or an input without audio, charging nothing for it", async () => {
    const track = (url: string) => ({
      type: "mp4",
      video: [{ codec: "h264", width: 320, height: 180 }],
      subtitle_tracks: [{ source: "url", url, language: "fr" }],
    });
    const created = await ok(
      call(
        h.base,
        "JobService/Create",
        {
          input_origin_id: inputOrigin,
          input_path: "talks/silent.mp4",
          output_origin_id: outputOrigin,
          outputs: [
            track(`${web.url}/binary.srt`),
            track(`${web.url}/huge.vtt`),
            track(`${web.url}/missing.vtt`),
            { type: "mp4", video: [{ codec: "h264", width: 320, height: 180 }], subtitle_tracks: [{ source: "generated", language: "en" }] },
            { type: "mp4", video: [{ codec: "h264", width: 320, height: 180 }] },
          ],
        },
        key,
      ),
    );
    const job = await waitFor(created.job.id);
    expect(job.status).toBe("partial");
    expect(job.outputs.map((o: any) => o.error_code)).toEqual(["subtitle_invalid", "subtitle_invalid", "subtitle_unreachable", "input_unsupported", ""]);
    expect(job.outputs[0].error_message).toMatch(/subtitle track 0/);
    expect(job.outputs[1].error_message).toMatch(/limit/);
    expect(job.outputs[3].error_message).toMatch(/no audio/);
    // The generated track's fee was quoted and voided with its output.
    const line = (job.cost_breakdown.lines as any[]).find((l) => l.description.startsWith("Captions of"));
    expect(line.estimated_amount_eur).toBeGreaterThan(0);
    expect(line.actual_amount_eur).toBe(0);
    expect((job.fees as any[]).some((f) => f.fee_type === "transcription")).toBe(false);
    expect(job.subtitle_results).toEqual([]);
  });

  it("refuses bad tracks at Create, naming the field", async () => {
    const res = await call(
      h.base,
      "JobService/Create",
      {
        input_url: `${web.url}/speech.mp4`,
        output_origin_id: outputOrigin,
        outputs: [
          {
            type: "hls",
            video: [{ codec: "h264", width: 320, height: 180 }],
            subtitle_tracks: [
              { source: "generated", language: "tlh" },
              { source: "url", url: "subs/en.vtt" },
              { source: "url", url: "ftp://example.com/a.srt" },
            ],
          },
        ],
      },
      key,
    );
    expect(res.status).toBe(400);
    const details = await errorDetails(res.body);
    expect(details.fieldViolations.map((v) => v.field)).toEqual([
      "outputs[0].subtitle_tracks[0].language",
      "outputs[0].subtitle_tracks[2].url",
      "outputs[0].subtitle_tracks[1].url",
    ]);
    expect(details.fieldViolations[0]!.description).toMatch(/does not know tlh/);
  });
});

/** The BaseURL text of the MPD's text adaptation set (parseXml keeps elements, not text). */
function readBaseUrl(mpd: string): string {
  const set = /<AdaptationSet[^>]*mimeType="text\/vtt"[\s\S]*?<\/AdaptationSet>/.exec(mpd)![0];
  return /<BaseURL>([^<]+)<\/BaseURL>/.exec(set)![1]!;
}
