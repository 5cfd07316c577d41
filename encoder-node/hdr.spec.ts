// colourPlanOf per mode and input range; the encoders' HDR parameters; the MPD's CICP descriptors.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { HdrMode, VideoVariantSchema } from "../src/gen/media/v1/job_pb.js";
import { VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import type { MasteringDisplay } from "../src/hdr-metadata.js";
import { codecString } from "./ffmpeg.js";
import { colourPlanOf, dashColourOf, DEFAULT_MASTERING_DISPLAY, signalMpdColour, svtAv1HdrParams, x265HdrParams } from "./hdr.js";
import type { ProbeResult } from "./probe.js";

const md: MasteringDisplay = {
  red: [0.68, 0.32],
  green: [0.265, 0.69],
  blue: [0.15, 0.06],
  whitePoint: [0.3127, 0.329],
  maxLuminance: 1000,
  minLuminance: 0.0001,
};
const input = (color?: { primaries: string; transfer: string; matrix: string }, hdr = true): ProbeResult => ({
  format: "mov,mp4,m4a,3gp,3g2,mj2",
  durationMs: 2000,
  sizeBytes: 1,
  bitRate: 1,
  video: {
    codec: "hevc",
    width: 640,
    height: 360,
    frameRate: 25,
    bitRate: 1,
    pixelFormat: "yuv420p10le",
    ...(color ? { color } : {}),
    ...(hdr ? { masteringDisplay: md, contentLight: { maxCll: 1000, maxFall: 400 } } : {}),
  },
});
const PQ = input({ primaries: "bt2020", transfer: "smpte2084", matrix: "bt2020nc" });
const HLG = input({ primaries: "bt2020", transfer: "arib-std-b67", matrix: "bt2020nc" }, false);
const SDR = input(undefined, false);
const variant = (mode: HdrMode, hdr: { maxCll?: number; maxFall?: number; masterDisplay?: string } = {}) =>
  create(VideoVariantSchema, { codec: VideoCodec.H265, hdr: { mode, ...hdr } });

describe("colourPlanOf", () => {
  it("leaves an SDR input without a mode alone, and tone-maps an HDR one", () => {
    expect(colourPlanOf(create(VideoVariantSchema, { codec: VideoCodec.H264 }), SDR)).toBeUndefined();
    const plan = colourPlanOf(create(VideoVariantSchema, { codec: VideoCodec.H264 }), PQ)!;
    expect(plan).toMatchObject({ range: "SDR", tenBit: false, primaries: "bt709", transfer: "bt709", matrix: "bt709" });
    expect(plan.steps.join(",")).toBe(
      "zscale=tin=smpte2084:pin=bt2020:min=bt2020nc:t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv",
    );
  });

  it("passthrough keeps PQ and its metadata, the caller's light levels over the input's; an SDR input stays SDR", () => {
    expect(colourPlanOf(variant(HdrMode.PASSTHROUGH), PQ)).toEqual({
      range: "PQ",
      steps: [],
      tenBit: true,
      primaries: "bt2020",
      transfer: "smpte2084",
      matrix: "bt2020nc",
      masteringDisplay: md,
      contentLight: { maxCll: 1000, maxFall: 400 },
    });
    expect(colourPlanOf(variant(HdrMode.PASSTHROUGH, { maxFall: 300 }), PQ)?.contentLight).toEqual({ maxCll: 1000, maxFall: 300 });
    expect(colourPlanOf(variant(HdrMode.PASSTHROUGH), SDR)).toEqual({
      range: "SDR",
      steps: [],
      tenBit: false,
      primaries: "bt709",
      transfer: "bt709",
      matrix: "bt709",
    });
  });

  it("hdr10 and hlg convert with zscale (SDR white at 203 cd/m²), PQ gets a mastering display", () => {
    const fromHlg = colourPlanOf(variant(HdrMode.HDR10), HLG)!;
    expect(fromHlg.steps).toEqual(["zscale=tin=arib-std-b67:pin=bt2020:min=bt2020nc:t=smpte2084:p=bt2020:m=bt2020nc:r=tv:npl=203"]);
    expect(fromHlg.masteringDisplay).toEqual(DEFAULT_MASTERING_DISPLAY);
    expect(fromHlg.contentLight).toBeUndefined();
    expect(colourPlanOf(variant(HdrMode.HDR10), PQ)?.steps).toEqual([]);
    const fromSdr = colourPlanOf(variant(HdrMode.HLG), SDR)!;
    expect(fromSdr).toMatchObject({ range: "HLG", tenBit: true, transfer: "arib-std-b67" });
    expect(fromSdr.steps).toEqual(["zscale=tin=bt709:pin=bt709:min=bt709:t=arib-std-b67:p=bt2020:m=bt2020nc:r=tv:npl=203"]);
    expect(fromSdr.masteringDisplay).toBeUndefined();
    const given = colourPlanOf(variant(HdrMode.HDR10, { masterDisplay: "G(8500,39850)B(6550,2300)R(35400,14600)WP(15635,16450)L(40000000,50)" }), SDR)!;
    expect(given.masteringDisplay).toEqual({
      green: [0.17, 0.797],
      blue: [0.131, 0.046],
      red: [0.708, 0.292],
      whitePoint: [0.3127, 0.329],
      maxLuminance: 4000,
      minLuminance: 0.005,
    });
  });

  it("writes x265's and SVT-AV1's notations", () => {
    const plan = colourPlanOf(variant(HdrMode.PASSTHROUGH), PQ)!;
    expect(x265HdrParams(plan)).toEqual([
      "hdr10=1",
      "repeat-headers=1",
      "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)",
      "max-cll=1000,400",
    ]);
    expect(svtAv1HdrParams(plan)).toEqual([
      "mastering-display=G(0.2650,0.6900)B(0.1500,0.0600)R(0.6800,0.3200)WP(0.3127,0.3290)L(1000,0.0001)",
      "content-light=1000,400",
    ]);
    expect(x265HdrParams(colourPlanOf(variant(HdrMode.HLG), PQ)!)).toEqual(["repeat-headers=1"]);
    expect(x265HdrParams(colourPlanOf(variant(HdrMode.TONEMAP), PQ)!)).toEqual([]);
  });
});

describe("signalMpdColour", () => {
  const ffmpegMpd = `<MPD>
	<Period id="0" start="PT0.0S">
		<AdaptationSet id="0" contentType="video" startWithSAP="1">
			<Representation id="0" mimeType="video/mp4" codecs="hvc1.2.4.L90.B0">
			</Representation>
		</AdaptationSet>
		<AdaptationSet id="1" contentType="audio" startWithSAP="1">
			<Representation id="1" mimeType="audio/mp4" codecs="mp4a.40.2">
			</Representation>
		</AdaptationSet>
	</Period>
</MPD>`;

  it("adds the three descriptors to video adaptation sets only, before their Representations, once", () => {
    const colour = dashColourOf([undefined, colourPlanOf(variant(HdrMode.HLG), PQ)])!;
    expect(colour).toEqual({ primaries: 9, transfer: 18, matrix: 9 });
    const out = signalMpdColour(ffmpegMpd, colour);
    expect(out).toContain(`<AdaptationSet id="0" contentType="video" startWithSAP="1">
			<SupplementalProperty schemeIdUri="urn:mpeg:mpegB:cicp:ColourPrimaries" value="9"/>
			<SupplementalProperty schemeIdUri="urn:mpeg:mpegB:cicp:TransferCharacteristics" value="18"/>
			<SupplementalProperty schemeIdUri="urn:mpeg:mpegB:cicp:MatrixCoefficients" value="9"/>
			<Representation id="0"`);
    expect(out.match(/cicp/g)).toHaveLength(3);
    expect(signalMpdColour(out, colour)).toBe(out);
  });

  it("signals nothing for SDR", () => {
    expect(dashColourOf([colourPlanOf(variant(HdrMode.TONEMAP), PQ), undefined])).toBeUndefined();
  });
});

describe("codecString of VP9", () => {
  it("names the profile: 2 for 10-bit 4:2:0", () => {
    expect(codecString({ codec: "vp9", profile: "Profile 2", level: -99, pixelFormat: "yuv420p10le" }, true)).toBe("vp09.02.10.10");
    expect(codecString({ codec: "vp9", profile: "", level: 31, pixelFormat: "yuv420p10le" }, true)).toBe("vp09.02.31.10");
    expect(codecString({ codec: "vp9", profile: "Profile 0", level: 30, pixelFormat: "yuv420p" }, true)).toBe("vp09.00.30.08");
  });
});
