// Codec rules in one place: the settings each video codec accepts, the sample rates and channels of
// each audio codec, the codecs each container carries, and the named resolutions. Both preset checks
// and the output spec check of job requests (spec-check.ts) read them.
import { AudioCodec, VideoCodec } from "./gen/media/v1/preset_pb.js";

export const CODEC_NAMES = { [VideoCodec.H264]: "h264", [VideoCodec.H265]: "h265", [VideoCodec.VP9]: "vp9", [VideoCodec.AV1]: "av1" } as const;
export type VideoCodecName = (typeof CODEC_NAMES)[keyof typeof CODEC_NAMES];
/** The codec's name, or undefined for unspecified and unknown values. */
export const videoCodecName = (c: VideoCodec): VideoCodecName | undefined => (c in CODEC_NAMES ? CODEC_NAMES[c as keyof typeof CODEC_NAMES] : undefined);

/** Named resolutions give the short side, so a portrait 1080p is 1080 wide. */
// No prototype: a name like "toString" is not a resolution.
export const RESOLUTION_LINES: Readonly<Record<string, number>> = Object.assign(Object.create(null) as Record<string, number>, {
  "480p": 480,
  "720p": 720,
  "1080p": 1080,
  "1440p": 1440,
  "2160p": 2160,
  "4320p": 4320,
});
export const RESOLUTIONS: readonly string[] = Object.keys(RESOLUTION_LINES);

const H26X_PRESETS = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower"];
const H264_LEVELS = ["1", "1b", "1.1", "1.2", "1.3", "2", "2.1", "2.2", "3", "3.1", "3.2", "4", "4.1", "4.2", "5", "5.1", "5.2", "6", "6.1", "6.2"];
const H265_LEVELS = ["1", "2", "2.1", "3", "3.1", "4", "4.1", "5", "5.1", "5.2", "6", "6.1", "6.2"];
const AV1_LEVELS = [
  "2",
  "2.1",
  "2.2",
  "2.3",
  "3",
  "3.1",
  "3.2",
  "3.3",
  "4",
  "4.1",
  "4.2",
  "4.3",
  "5",
  "5.1",
  "5.2",
  "5.3",
  "6",
  "6.1",
  "6.2",
  "6.3",
  "7",
  "7.1",
  "7.2",
  "7.3",
];

export interface CodecRules {
  crf: readonly [number, number];
  profiles: readonly string[];
  presets: readonly string[];
  tunes: readonly string[];
  /** Empty when the codec takes no level. */
  levels: readonly string[];
  /** Whether B-frames and reference frames can be set (x264 and x265 options). */
  bframes: boolean;
}
export const CODEC_RULES: Readonly<Record<VideoCodecName, CodecRules>> = {
  h264: {
    crf: [15, 35],
    profiles: ["baseline", "main", "high"],
    presets: H26X_PRESETS,
    tunes: ["film", "animation", "grain", "stillimage", "fastdecode"],
    levels: H264_LEVELS,
    bframes: true,
  },
  h265: { crf: [18, 35], profiles: ["main", "main10"], presets: H26X_PRESETS, tunes: ["grain", "animation", "fastdecode"], levels: H265_LEVELS, bframes: true },
  vp9: { crf: [15, 50], profiles: ["0", "1", "2", "3"], presets: ["good", "best", "realtime"], tunes: [], levels: [], bframes: false },
  // SVT-AV1 in this build encodes 4:2:0 only, which is the main profile.
  av1: {
    crf: [20, 55],
    profiles: ["main"],
    presets: ["3", "4", "5", "6", "7", "8", "9", "10", "11", "12"],
    tunes: ["vq", "psnr"],
    levels: AV1_LEVELS,
    bframes: false,
  },
};

export const AUDIO_NAMES: Readonly<Partial<Record<AudioCodec, "aac" | "opus" | "mp3">>> = {
  [AudioCodec.AAC]: "aac",
  [AudioCodec.OPUS]: "opus",
  [AudioCodec.MP3]: "mp3",
};
const SAMPLE_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000];
export const AUDIO_RULES: Readonly<Record<"aac" | "opus" | "mp3", { sampleRates: readonly number[]; maxChannels: number }>> = {
  aac: { sampleRates: SAMPLE_RATES, maxChannels: 8 },
  opus: { sampleRates: [8000, 12000, 16000, 24000, 48000], maxChannels: 8 },
  mp3: { sampleRates: SAMPLE_RATES.filter((r) => r <= 48000), maxChannels: 2 },
};

const ALL_VIDEO = [VideoCodec.H264, VideoCodec.H265, VideoCodec.VP9, VideoCodec.AV1];
const ALL_AUDIO = [AudioCodec.AAC, AudioCodec.OPUS, AudioCodec.MP3];
/** The codecs each file container carries (ts as the segment container of HLS). */
export const CONTAINER_CODECS: Readonly<Record<"mp4" | "mkv" | "webm" | "mov" | "ts", { video: readonly VideoCodec[]; audio: readonly AudioCodec[] }>> = {
  mp4: { video: ALL_VIDEO, audio: ALL_AUDIO },
  mkv: { video: ALL_VIDEO, audio: ALL_AUDIO },
  webm: { video: [VideoCodec.VP9, VideoCodec.AV1], audio: [AudioCodec.OPUS] },
  mov: { video: [VideoCodec.H264, VideoCodec.H265], audio: [AudioCodec.AAC, AudioCodec.MP3] },
  ts: { video: [VideoCodec.H264, VideoCodec.H265], audio: [AudioCodec.AAC, AudioCodec.MP3] },
};
