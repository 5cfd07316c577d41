// What an encoder node needs on its machine, checked when it starts (and again while something is
// missing): ffmpeg and ffprobe of a usable version (required: without them the node takes no
// task, so jobs wait in the queue and health says why, rather than fail one by one), Shaka
// Packager (DRM, CMAF and DASH outputs) and the speech recogniser (generated captions), which only
// the outputs that use them need. Each missing part is one line saying how to install it.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { packagerPath } from "./packager.js";
import { recogniserPaths } from "./recogniser.js";

const run = promisify(execFile);

/** The oldest ffmpeg the encoder's command lines are tested with (Debian 12's). */
export const MIN_FFMPEG: readonly [number, number] = [5, 1];

export interface Prerequisite {
  readonly name: string;
  /** Without it the node takes no task. */
  readonly required: boolean;
  readonly ok: boolean;
  /** The version found, or what is wrong and how to install it. */
  readonly detail: string;
}

const INSTALL_FFMPEG = "install it: apt-get install ffmpeg (Debian, Ubuntu), dnf install ffmpeg (Fedora), brew install ffmpeg (macOS)";

/** The version in an `ffmpeg -version` first line; undefined for builds that name a git revision instead. */
export function ffmpegVersion(firstLine: string): [number, number] | undefined {
  const m = /version n?(\d+)\.(\d+)/.exec(firstLine);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

async function tool(name: "ffmpeg" | "ffprobe"): Promise<Prerequisite> {
  let out: string;
  try {
    out = (await run(name, ["-hide_banner", "-version"], { timeout: 10_000 })).stdout;
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === "ENOENT";
    return {
      name,
      required: true,
      ok: false,
      detail: missing
        ? `${name} is not installed (not on PATH): the encoder needs ${name} ${MIN_FFMPEG.join(".")} or newer; ${INSTALL_FFMPEG}`
        : `${name} does not run (${(e as Error).message.split("\n")[0]}); ${INSTALL_FFMPEG}`,
    };
  }
  const first = out.split("\n")[0] ?? "";
  const version = ffmpegVersion(first);
  if (version && (version[0] < MIN_FFMPEG[0] || (version[0] === MIN_FFMPEG[0] && version[1] < MIN_FFMPEG[1]))) {
    return {
      name,
      required: true,
      ok: false,
      detail: `${name} ${version.join(".")} is too old: the encoder needs ${MIN_FFMPEG.join(".")} or newer; ${INSTALL_FFMPEG}`,
    };
  }
  return { name, required: true, ok: true, detail: first.replace(/ Copyright.*$/, "") };
}

function packager(): Prerequisite {
  const binary = packagerPath();
  return existsSync(binary)
    ? { name: "packager", required: false, ok: true, detail: binary }
    : {
        name: "packager",
        required: false,
        ok: false,
        detail: `Shaka Packager is missing (${binary}): DRM, CMAF and DASH outputs fail until npm install puts it back (the shaka-packager package ships it) or MEDIA_PACKAGER names one`,
      };
}

function recogniser(): Prerequisite {
  const { python } = recogniserPaths();
  return existsSync(python)
    ? { name: "recogniser", required: false, ok: true, detail: python }
    : {
        name: "recogniser",
        required: false,
        ok: false,
        detail:
          "the speech recogniser is not installed: generated subtitle tracks fail with transcription_failed until bash scripts/asr-setup.sh installs it (npm test does)",
      };
}

export async function checkPrerequisites(): Promise<Prerequisite[]> {
  return [await tool("ffmpeg"), await tool("ffprobe"), packager(), recogniser()];
}

/**
 * An encoder node's readiness (/readyz): it takes tasks (ffmpeg and ffprobe), and Shaka Packager,
 * which DRM, CMAF and DASH outputs need, is there; looked at again on each call (one stat).
 */
export function encoderReadiness(node: { health(): { ok: boolean; message?: string } }): { ok: boolean; message?: string } {
  const taking = node.health();
  const shaka = packager();
  const missing = [...(taking.ok ? [] : [taking.message ?? "the encoder takes no task"]), ...(shaka.ok ? [] : [shaka.detail])];
  return missing.length === 0 ? { ok: true } : { ok: false, message: missing.join("; ") };
}

/** The node's standing: able to take tasks when every required part is there; the message names what is missing. */
export function standing(found: readonly Prerequisite[]): { ok: boolean; message?: string } {
  const missing = found.filter((p) => p.required && !p.ok);
  return missing.length === 0 ? { ok: true } : { ok: false, message: missing.map((p) => p.detail).join("; ") };
}
