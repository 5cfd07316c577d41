// HDR passthrough in a real player: a synthetic HDR10 source (PQ, BT.2020, mastering metadata) encoded
// as AV1 10-bit fMP4 HLS with hdr.mode passthrough, played by hls.js (from node_modules) in Debian's
// Chromium. AV1, not HEVC: Chromium has no software HEVC decoder. hls.js must read the variant as PQ
// (VIDEO-RANGE) and play past 1.5 s without a fatal error.
import { create } from "@bufbuild/protobuf";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput } from "../../encoder-node/plan.js";
import { probe } from "../../encoder-node/probe.js";
import { HdrMode, OutputSpecSchema, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { launchChromium, openPage, videoState } from "../browser.js";

const exec = promisify(execFile);
const require = createRequire(import.meta.url);
const HLS_JS = require.resolve("hls.js/dist/hls.min.js");

interface HlsState {
  fatal: string[];
  /** VIDEO-RANGE of each level as hls.js parsed it. */
  ranges: string[];
}

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><script src="/hls.js"></script></head>
<body><video id="v" muted playsinline width="640" height="360"></video><script>
const state = { fatal: [], ranges: [] };
window.__hls = state;
const video = document.getElementById("v");
const hls = new Hls();
hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) state.fatal.push(d.type + ": " + d.details + (d.reason ? " " + d.reason : "")); });
hls.on(Hls.Events.MANIFEST_PARSED, (_, d) => {
  state.ranges = d.levels.map((l) => l.videoRange);
  video.play().catch((e) => state.fatal.push("play: " + e));
});
hls.loadSource(new URLSearchParams(location.search).get("m3u8"));
hls.attachMedia(video);
</script></body></html>`;

/** 3 s of testsrc2 as HDR10: white at 1000 cd/m², PQ in BT.2020, 10-bit HEVC with mastering display and content light SEI. */
async function makeHdr10(file: string): Promise<void> {
  const x265 = "log-level=error:hdr10=1:repeat-headers=1:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400";
  await exec("ffmpeg", [
    ...["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=3"],
    ...["-vf", "zscale=tin=bt709:pin=bt709:min=bt709:t=smpte2084:p=bt2020:m=bt2020nc:r=tv:npl=1000,format=yuv420p10le"],
    ...["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", x265, "-g", "25"],
    ...["-color_primaries", "bt2020", "-color_trc", "smpte2084", "-colorspace", "bt2020nc", file],
  ]);
}

describe("HDR passthrough HLS in hls.js (Chromium)", { timeout: 90_000 }, () => {
  let root: string;
  let browser: Browser;
  let server: Server;
  let master: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), "hdr-browser-"));
    const input = path.join(root, "hdr10.mp4");
    const [b] = await Promise.all([launchChromium(), makeHdr10(input)]);
    browser = b;
    const spec = create(OutputSpecSchema, {
      type: OutputType.HLS,
      hls: { segmentFormat: SegmentFormat.FMP4, segmentDurationSeconds: 1 },
      video: [{ codec: VideoCodec.AV1, width: 640, height: 360, av1: { encoderPreset: "12" }, hdr: { mode: HdrMode.PASSTHROUGH } }],
    });
    const dir = path.join(root, "out");
    const plan = planOutput(spec, { file: input, probe: await probe(input) }, { outputId: "hdr", workDir: dir });
    await runPlan(plan, {});
    master = `/out/${plan.main}`;
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname === "/") return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
      const file = url.pathname === "/hls.js" ? HLS_JS : path.join(root, path.normalize(decodeURIComponent(url.pathname)));
      if (file !== HLS_JS && !file.startsWith(root + path.sep)) return void res.writeHead(404).end();
      try {
        const body = readFileSync(file);
        const type = file.endsWith(".m3u8") ? "application/vnd.apple.mpegurl" : file.endsWith(".js") ? "text/javascript" : "video/mp4";
        res.writeHead(200, { "content-type": type, "content-length": String(body.length) }).end(body);
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("the master says VIDEO-RANGE=PQ and a 10-bit AV1 codec string; hls.js reads PQ and plays past 1.5 s", async () => {
    expect(readFileSync(path.join(root, master), "utf8")).toMatch(/#EXT-X-STREAM-INF:.*CODECS="av01\.0\.\d\dM\.10".*VIDEO-RANGE=PQ/);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { page, log } = await openPage(browser, `${base}/?m3u8=${encodeURIComponent(base + master)}`);
    const hlsState = () => page.evaluate(() => (window as unknown as { __hls: HlsState }).__hls);
    try {
      await page.waitForFunction(
        () => {
          const v = document.querySelector("video");
          const s = (window as unknown as { __hls: HlsState }).__hls;
          return s.fatal.length > 0 || (v !== null && v.currentTime > 1.5);
        },
        undefined,
        { timeout: 30_000 },
      );
    } catch (e) {
      throw new Error(`playback stalled: ${JSON.stringify({ video: await videoState(page), hls: await hlsState(), log: log.console.slice(-10) })}`, {
        cause: e,
      });
    }
    const state = await hlsState();
    expect(state.fatal).toEqual([]);
    expect(state.ranges).toEqual(["PQ"]);
    expect((await videoState(page)).currentTime).toBeGreaterThan(1.5);
    await page.close();
  });
});
