// Builders the planner specs share: a probed input, an output specification, a plan of them, and
// readers of an ffmpeg command.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { OutputSpecSchema, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { planOutput, type OutputPlan } from "./plan.js";
import type { ProbeResult } from "./probe.js";

export const probe = (o: Partial<ProbeResult> = {}, video: Partial<NonNullable<ProbeResult["video"]>> = {}): ProbeResult => ({
  format: "mov,mp4,m4a,3gp,3g2,mj2",
  durationMs: 10_000,
  sizeBytes: 10_000_000,
  bitRate: 8_000_000,
  video: { codec: "h264", width: 1920, height: 1080, frameRate: 30, bitRate: 7_800_000, pixelFormat: "yuv420p", ...video },
  audio: { codec: "aac", sampleRate: 44100, channels: 2, channelLayout: "stereo", bitRate: 128_000 },
  audioStreams: 1,
  ...o,
});

export const spec = (init: Parameters<typeof create<typeof OutputSpecSchema>>[1]): OutputSpec => create(OutputSpecSchema, init);
/** The fields of an output specification, to spread over a base one. */
export type SpecInit = Exclude<MessageInitShape<typeof OutputSpecSchema>, OutputSpec>;
export const plan = (s: OutputSpec, p: ProbeResult = probe(), opts: Partial<Parameters<typeof planOutput>[2]> = {}): OutputPlan =>
  planOutput(s, { file: "/in/input", probe: p }, { outputId: "out_1", workDir: "/work/out_1", ...opts });

/** Value following a flag in a command, e.g. after("-crf:v:0"). */
export const after = (cmd: readonly string[], flag: string): string | undefined => {
  const i = cmd.indexOf(flag);
  return i >= 0 ? cmd[i + 1] : undefined;
};
export const graph = (cmd: readonly string[]) => after(cmd, "-filter_complex") ?? "";
