// Sources the benches share: a 1080p30 test pattern with a tone, made once and kept in .cache/bench.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const CACHE = path.join(import.meta.dirname, "..", "..", ".cache", "bench");

/** A 1080p30 test pattern (moving) with a 440 Hz tone, of this length, named after the bench. */
export async function testPattern1080p(name: string, seconds: number): Promise<string> {
  mkdirSync(CACHE, { recursive: true });
  const file = path.join(CACHE, `${name}-1080p-${seconds}s.mp4`);
  if (existsSync(file)) return file;
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", `testsrc2=size=1920x1080:rate=30:duration=${seconds}`],
    ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", `${file}.part.mp4`],
  ]);
  await run("mv", [`${file}.part.mp4`, file]);
  return file;
}
