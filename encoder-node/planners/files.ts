// Progressive files (MP4, WebM, MKV, MOV): one command, one file.
import path from "node:path";
import { OutputType } from "../../src/gen/media/v1/job_pb.js";
import { type Rendition, audioArgs, renditionWeight } from "../renditions.js";
import { videoArgs } from "../video-args.js";
import { audioMaps, summary } from "./commands.js";
import { type Layout, ladderInput, plainInput, withFiles } from "./layout.js";
import type { FilePlan } from "./types.js";

export interface Container {
  readonly ext: string;
  readonly format: string;
  readonly movflags: boolean;
}
export const PROGRESSIVE: Partial<Record<OutputType, Container>> = {
  [OutputType.MP4]: { ext: "mp4", format: "mp4", movflags: true },
  [OutputType.WEBM]: { ext: "webm", format: "webm", movflags: false },
  [OutputType.MKV]: { ext: "mkv", format: "matroska", movflags: false },
  [OutputType.MOV]: { ext: "mov", format: "mov", movflags: true },
};

export function progressivePlan(l: Layout, container: Container): FilePlan {
  const { ctx, audio, base, strategy } = l;
  const mux = (file: string) => [...(container.movflags ? ["-movflags", "+faststart"] : []), "-max_muxing_queue_size", "4096", "-f", container.format, file];
  const audioOut = audio.flatMap((p, j) => audioArgs(p, j, ctx.input));
  if (l.renditions.length === 0) {
    const file = `audio.${container.ext}`;
    const cmd = [...plainInput(l), ...audioMaps(audio), "-vn", ...audioOut, ...mux(path.join(base.dir, file))];
    return { kind: "file", ...base, main: file, commands: [cmd], parallel: false, strategy };
  }
  const renditions = withFiles(l.renditions, (r) => `${r.name}.${container.ext}`);
  const output = (r: Rendition, label: string) => [
    "-map",
    label,
    ...videoArgs(r, 0, ctx),
    ...audioMaps(audio),
    ...audioOut,
    ...mux(path.join(base.dir, r.file)),
  ];
  const main = [...renditions].sort((x, y) => y.width * y.height - x.width * x.height)[0]!.file;
  const renditionPlans = renditions.map(summary);
  if (strategy === "split" || renditions.length === 1) {
    const cmd = [...ladderInput(l, renditions), ...renditions.flatMap((r, i) => output(r, `[v${i}]`))];
    return { kind: "file", ...base, main, commands: [cmd], parallel: false, strategy, renditions: renditionPlans };
  }
  const commands = renditions.map((r) => [...ladderInput(l, [r]), ...output(r, "[v0]")]);
  return { kind: "file", ...base, main, commands, parallel: true, strategy, weights: renditions.map(renditionWeight), renditions: renditionPlans };
}
