// Which uWebSockets.js build serves, if any: the newest build that loads on this Node and this C
// library, then the older one, else node:http. The repackaged 20.57 (Node 20 to 25) needs glibc
// 2.38 (Debian 13, Ubuntu 24.04); the 20.30 build loads on older systems but has binaries for
// Node 20 only. A build is tried by loading its binary, so a missing ABI or a too-old glibc is
// found here, with its reason, and not at the first request.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type uWS from "uWebSockets.js";

export type UwsModule = typeof uWS;

export interface UwsBuild {
  /** The package alias in package.json. */
  readonly alias: string;
  readonly label: string;
  /** Where its binaries sit, relative to its resolved main file. */
  readonly binaries: string;
}

/** In order of preference. */
export const UWS_BUILDS: readonly UwsBuild[] = [
  { alias: "uws-next", label: "uWebSockets.js 20.57 (@btc-vision build)", binaries: "." },
  { alias: "uWebSockets.js", label: "uWebSockets.js 20.30 (@trufflesuite build)", binaries: "../binaries" },
];

export type UwsChoice =
  { readonly uws: UwsModule; readonly label: string; readonly refused: readonly string[] } | { readonly uws?: undefined; readonly refused: readonly string[] };

const require = createRequire(import.meta.url);

/** The first build whose binary loads here, and why each one before it did not. */
export function loadUws(builds: readonly UwsBuild[] = UWS_BUILDS, load: (file: string) => unknown = require, abi = process.versions.modules): UwsChoice {
  const refused: string[] = [];
  const binary = `uws_${process.platform}_${process.arch}_${abi}.node`;
  for (const b of builds) {
    let main: string;
    try {
      main = require.resolve(b.alias);
    } catch {
      refused.push(`${b.label}: not installed`);
      continue;
    }
    const file = path.join(path.dirname(main), b.binaries, binary);
    if (!existsSync(file)) {
      refused.push(`${b.label}: no build for this Node (${binary})`);
      continue;
    }
    try {
      load(file);
      return { uws: load(main) as UwsModule, label: b.label, refused };
    } catch (e) {
      // e.g. "version `GLIBC_2.38' not found": the first line says which.
      refused.push(`${b.label}: ${(e instanceof Error ? e.message : String(e)).split("\n").at(-1)!.slice(0, 200)}`);
    }
  }
  return { refused };
}

/** The preferred build, for callers that need uWS (tests of the uWS host); throws with every reason when none loads. */
export function requireUws(): UwsModule {
  const found = loadUws();
  if (!found.uws) throw new Error(`no uWebSockets.js build loads here: ${found.refused.join("; ")}`);
  return found.uws;
}
