// HDR of a video variant (hdr.mode): the input's colour kept (passthrough), converted to PQ (hdr10) or
// HLG (hlg), or tone-mapped to BT.709 SDR (tonemap), as zscale steps after the scaler, encoder colour
// flags and HDR static metadata; and how manifests signal the result. Pure; renditions.ts applies it.
import { HdrMode, type VideoVariant } from "../src/gen/media/v1/job_pb.js";
import { CHROMA_UNIT, LUMINANCE_UNIT, parseMasterDisplay, type ContentLight, type MasteringDisplay } from "../src/hdr-metadata.js";
import type { ProbeResult } from "./probe.js";

/** HLS VIDEO-RANGE values. */
export type VideoRange = "SDR" | "PQ" | "HLG";

/** What one rendition's colour becomes. */
export interface ColourPlan {
  range: VideoRange;
  /** Filter steps after scaling; empty when the input's colour is kept as it is. */
  steps: string[];
  /** PQ and HLG are 10-bit; SDR keeps the variant's own bit depth. */
  tenBit: boolean;
  /** Encoder colour flags, in ffmpeg's names. */
  primaries: string;
  transfer: string;
  matrix: string;
  masteringDisplay?: MasteringDisplay;
  contentLight?: ContentLight;
}

type Video = NonNullable<ProbeResult["video"]>;

const RANGE_OF_TRANSFER: Readonly<Record<string, VideoRange>> = { smpte2084: "PQ", "arib-std-b67": "HLG" };

/** The dynamic range an input's transfer function says. */
export const inputRange = (video: Video | undefined): VideoRange => RANGE_OF_TRANSFER[video?.color?.transfer ?? ""] ?? "SDR";

// Names ffprobe reports that zscale also takes as they are; others are read as the defaults.
const ZSCALE_PRIMARIES = new Set(["bt709", "bt2020", "smpte170m", "smpte240m", "bt470bg", "bt470m", "smpte431", "smpte432"]);
const ZSCALE_TRANSFERS = new Set([
  "bt709",
  "smpte170m",
  "smpte240m",
  "bt470bg",
  "bt470m",
  "bt2020-10",
  "bt2020-12",
  "smpte2084",
  "arib-std-b67",
  "iec61966-2-1",
]);
const ZSCALE_MATRICES = new Set(["bt709", "bt2020nc", "smpte170m", "bt470bg", "smpte240m", "fcc"]);

/** The input's colour as zscale reads it: what the stream states, else BT.2020 for PQ and HLG and BT.709 for SDR. */
function inputColour(video: Video | undefined, range: VideoRange): { primaries: string; transfer: string; matrix: string } {
  const c = video?.color;
  const hdr = range !== "SDR";
  const pick = (name: string | undefined, names: Set<string>, fallback: string) => (name && names.has(name) ? name : fallback);
  return {
    primaries: pick(c?.primaries, ZSCALE_PRIMARIES, hdr ? "bt2020" : "bt709"),
    transfer: pick(c?.transfer, ZSCALE_TRANSFERS, "bt709"),
    matrix: pick(c?.matrix, ZSCALE_MATRICES, hdr ? "bt2020nc" : "bt709"),
  };
}

const TRANSFER_OF: Record<Exclude<VideoRange, "SDR">, string> = { PQ: "smpte2084", HLG: "arib-std-b67" };

/**
 * SDR white of a conversion to PQ or HLG, in cd/m²: BT.2408's HDR reference white (HLG's 75%). Between
 * PQ and HLG zscale works in absolute light, so this value cancels out there.
 */
const SDR_WHITE_NITS = 203;

/** The mastering display of a conversion to PQ that knows none: BT.2020 primaries, D65, 1000 cd/m² (HLG's reference display). */
export const DEFAULT_MASTERING_DISPLAY: MasteringDisplay = {
  red: [0.708, 0.292],
  green: [0.17, 0.797],
  blue: [0.131, 0.046],
  whitePoint: [0.3127, 0.329],
  maxLuminance: 1000,
  minLuminance: 0.0001,
};

/**
 * Filter steps that bring a PQ or HLG input to BT.709 SDR, as a variant without an hdr mode is
 * (tonemap): for the pictures made of the input (thumbnails); none for an SDR input.
 */
export function sdrStepsOf(input: ProbeResult): string[] {
  if (inputRange(input.video) === "SDR") return [];
  return colourPlanOf({ hdr: undefined } as VideoVariant, input)?.steps ?? [];
}

/**
 * The colour plan of a variant over an input; undefined leaves its colour as ffmpeg carries it
 * (no mode over an SDR input). No mode over a PQ or HLG input is tonemap, so an H.264 ladder of an
 * HDR source is not washed out. passthrough over an SDR input is SDR, its colour kept.
 */
export function colourPlanOf(v: VideoVariant, input: ProbeResult): ColourPlan | undefined {
  const video = input.video;
  const from = inputRange(video);
  const asked = v.hdr?.mode ?? HdrMode.UNSPECIFIED;
  const mode = asked === HdrMode.UNSPECIFIED ? (from === "SDR" ? undefined : HdrMode.TONEMAP) : asked;
  if (mode === undefined) return undefined;
  const src = inputColour(video, from);
  const tagged = `tin=${src.transfer}:pin=${src.primaries}:min=${src.matrix}`;
  if (mode === HdrMode.TONEMAP) {
    const sdr = { range: "SDR" as const, tenBit: false, primaries: "bt709", transfer: "bt709", matrix: "bt709" };
    if (from === "SDR") {
      const bt709 = src.primaries === "bt709" && src.matrix === "bt709";
      return { ...sdr, steps: bt709 ? [] : [`zscale=${tagged}:t=bt709:p=bt709:m=bt709:r=tv`] };
    }
    // Linear light with SDR white at 1.0; tonemap takes its peak from the frames' HDR metadata (else 1000 cd/m²).
    const steps = [`zscale=${tagged}:t=linear:npl=100`, "format=gbrpf32le", "zscale=p=bt709", "tonemap=hable:desat=0", "zscale=t=bt709:m=bt709:r=tv"];
    return { ...sdr, steps };
  }
  const config = v.hdr;
  const parsed = config?.masterDisplay ? parseMasterDisplay(config.masterDisplay) : undefined;
  const asConfigured = typeof parsed === "object" ? parsed : undefined;
  const light = (kept: ContentLight | undefined): ContentLight | undefined => {
    if (config?.maxCll === undefined && config?.maxFall === undefined) return kept;
    return { maxCll: config.maxCll ?? kept?.maxCll ?? 0, maxFall: config.maxFall ?? kept?.maxFall ?? 0 };
  };
  const metadata = (md: MasteringDisplay | undefined, cl: ContentLight | undefined) => ({
    ...(md ? { masteringDisplay: md } : {}),
    ...(cl ? { contentLight: cl } : {}),
  });
  if (mode === HdrMode.PASSTHROUGH) {
    if (from === "SDR") return { range: "SDR", steps: [], tenBit: false, ...src };
    return { range: from, steps: [], tenBit: true, ...src, ...metadata(asConfigured ?? video?.masteringDisplay, light(video?.contentLight)) };
  }
  const to: Exclude<VideoRange, "SDR"> = mode === HdrMode.HLG ? "HLG" : "PQ";
  const target = { primaries: "bt2020", transfer: TRANSFER_OF[to], matrix: "bt2020nc" };
  const same = src.primaries === target.primaries && src.transfer === target.transfer && src.matrix === target.matrix;
  const steps = same ? [] : [`zscale=${tagged}:t=${target.transfer}:p=bt2020:m=bt2020nc:r=tv:npl=${SDR_WHITE_NITS}`];
  if (to === "HLG") return { range: "HLG", steps, tenBit: true, ...target };
  // A PQ input's own metadata still describes it after its primaries or matrix are converted.
  const kept = from === "PQ" ? { md: video?.masteringDisplay, cl: video?.contentLight } : { md: undefined, cl: undefined };
  return { range: "PQ", steps, tenBit: true, ...target, ...metadata(asConfigured ?? kept.md ?? DEFAULT_MASTERING_DISPLAY, light(kept.cl)) };
}

const round = (n: number) => Math.round(n);

/** x265's master-display notation: chromaticity in 0.00002, luminance in 0.0001 cd/m². */
function x265MasterDisplay(md: MasteringDisplay): string {
  const xy = ([x, y]: [number, number]) => `(${round(x * CHROMA_UNIT)},${round(y * CHROMA_UNIT)})`;
  return `G${xy(md.green)}B${xy(md.blue)}R${xy(md.red)}WP${xy(md.whitePoint)}L(${round(md.maxLuminance * LUMINANCE_UNIT)},${round(md.minLuminance * LUMINANCE_UNIT)})`;
}

/** -x265-params entries: HDR10 SEI with the metadata, and parameter sets (with the SEI) at every keyframe, so each segment carries them. */
export function x265HdrParams(c: ColourPlan): string[] {
  const p: string[] = [];
  if (c.range === "PQ") p.push("hdr10=1");
  if (c.range !== "SDR") p.push("repeat-headers=1");
  if (c.masteringDisplay) p.push(`master-display=${x265MasterDisplay(c.masteringDisplay)}`);
  if (c.contentLight) p.push(`max-cll=${c.contentLight.maxCll},${c.contentLight.maxFall}`);
  return p;
}

/** -svtav1-params entries: SVT-AV1 (1.4) writes them as metadata OBUs. */
export function svtAv1HdrParams(c: ColourPlan): string[] {
  const p: string[] = [];
  const md = c.masteringDisplay;
  if (md) {
    const xy = ([x, y]: [number, number]) => `(${x.toFixed(4)},${y.toFixed(4)})`;
    p.push(`mastering-display=G${xy(md.green)}B${xy(md.blue)}R${xy(md.red)}WP${xy(md.whitePoint)}L(${md.maxLuminance},${md.minLuminance})`);
  }
  if (c.contentLight) p.push(`content-light=${c.contentLight.maxCll},${c.contentLight.maxFall}`);
  return p;
}

/** Encoder colour flags of video stream specifier s (":v:0"): the VUI, sequence header or container (vpcC, WebM Colour) carry them. */
export const colourFlags = (c: ColourPlan, s: string): string[] => [
  `-color_primaries${s}`,
  c.primaries,
  `-color_trc${s}`,
  c.transfer,
  `-colorspace${s}`,
  c.matrix,
  `-color_range${s}`,
  "tv",
];

// ───────────────────────────── DASH ─────────────────────────────

/** ISO/IEC 23091-2 (CICP) code points of the colour an HDR DASH adaptation set is signalled with. */
export interface CicpColour {
  primaries: number;
  transfer: number;
  matrix: number;
}

const CICP_PRIMARIES: Readonly<Record<string, number>> = { bt709: 1, bt470bg: 5, smpte170m: 6, smpte240m: 7, bt2020: 9, smpte432: 12 };
const CICP_TRANSFERS: Readonly<Record<string, number>> = { bt709: 1, smpte170m: 6, "bt2020-10": 14, smpte2084: 16, "arib-std-b67": 18 };
const CICP_MATRICES: Readonly<Record<string, number>> = { bt709: 1, bt470bg: 5, smpte170m: 6, bt2020nc: 9 };

/** The CICP colour of a DASH output's video when it is PQ or HLG (its variants share one hdr mode, see spec-check). */
export function dashColourOf(plans: readonly (ColourPlan | undefined)[]): CicpColour | undefined {
  const c = plans.find((p) => p !== undefined && p.range !== "SDR");
  if (!c) return undefined;
  return { primaries: CICP_PRIMARIES[c.primaries] ?? 9, transfer: CICP_TRANSFERS[c.transfer] ?? 16, matrix: CICP_MATRICES[c.matrix] ?? 9 };
}

/** Elements of a DASH AdaptationSet that come after its SupplementalProperty descriptors (the MPD schema's order). */
const AFTER_DESCRIPTORS =
  /<(InbandEventStream|Switching|RandomAccess|GroupLabel|Label|ProducerReferenceTime|Accessibility|Role|Rating|Viewpoint|ContentComponent|BaseURL|SegmentBase|SegmentList|SegmentTemplate|Representation)\b/;

/**
 * Adds DASH-IF's CICP descriptors (urn:mpeg:mpegB:cicp:ColourPrimaries, TransferCharacteristics,
 * MatrixCoefficients) to every video AdaptationSet of an MPD, ffmpeg's or Shaka Packager's.
 */
export function signalMpdColour(mpd: string, c: CicpColour): string {
  return mpd.replace(/<AdaptationSet\b[^>]*>[\s\S]*?<\/AdaptationSet>/g, (set) => {
    const open = /^<AdaptationSet\b[^>]*>/.exec(set)![0];
    const video = /contentType="video"|mimeType="video\//.test(open) || (!/contentType=/.test(open) && /mimeType="video\//.test(set));
    if (!video || set.includes("urn:mpeg:mpegB:cicp:TransferCharacteristics")) return set;
    const body = set.slice(open.length);
    const at = AFTER_DESCRIPTORS.exec(body);
    if (!at) return set;
    const indent = /[ \t]*$/.exec(body.slice(0, at.index))![0];
    const lines = [
      ["ColourPrimaries", c.primaries],
      ["TransferCharacteristics", c.transfer],
      ["MatrixCoefficients", c.matrix],
    ].map(([name, value]) => `<SupplementalProperty schemeIdUri="urn:mpeg:mpegB:cicp:${name}" value="${value}"/>\n${indent}`);
    return open + body.slice(0, at.index) + lines.join("") + body.slice(at.index);
  });
}
