// Real-looking synthetic sources for the content-aware tests and bench, made with ffmpeg filters:
//   talking  a talking head: a soft, out-of-focus textured background with a little sensor noise,
//            and a textured "face" that sways a few pixels, as a speaker does;
//   motion   the same kind of texture turning and drifting, with more noise: every pixel changes
//            every frame, as in sport or a fast pan.
// Encoded near-losslessly (x264 CRF 10), so the source's own artefacts do not steer the scores.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";

const run = promisify(execFile);

export type SourceKind = "talking" | "motion";

export function sourceGraph(kind: SourceKind, width: number, height: number, seconds: number, fps = 25): string {
  const texture = `color=c=0x4a5560:s=${width}x${height}:r=${fps}:d=${seconds},noise=alls=40:allf=u`;
  if (kind === "motion") return `${texture},gblur=sigma=1.2,rotate=a='t*0.7':fillcolor=0x203040,noise=alls=4:allf=t`;
  const face = { w: Math.round(width / 5.8 / 2) * 2, h: Math.round(height / 2.6 / 2) * 2 };
  return (
    `${texture},gblur=sigma=${(2.5 * width) / 640},noise=alls=2:allf=t[bg];` +
    `color=c=0xc8a080:s=${face.w}x${face.h}:r=${fps}:d=${seconds},noise=alls=25:allf=u,gblur=sigma=2[face];` +
    `[bg][face]overlay=x='${Math.round((width - face.w) / 2)}+${width / 100}*sin(t*1.3)':y='${Math.round(height / 3.6)}+${height / 120}*sin(t*2.1)'`
  );
}

/** Writes the source (once: an existing file is reused). */
export async function makeSource(file: string, kind: SourceKind, width: number, height: number, seconds: number): Promise<string> {
  if (existsSync(file)) return file;
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", sourceGraph(kind, width, height, seconds)],
    ...["-c:v", "libx264", "-preset", "veryfast", "-crf", "10", "-pix_fmt", "yuv420p", file],
  ]);
  return file;
}
