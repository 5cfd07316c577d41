// Which uWebSockets.js build serves, if any: the published build where it loads, else the one
// scripts/uws-build.sh built at install for this Node and this C library, else node:http. The
// published 20.57 (Node 20 to 25) needs glibc 2.38 (Debian 13, Ubuntu 24.04); on older systems
// npm's postinstall builds uWebSockets 20.58 from registry sources into .cache/uws/. A build is
// tried by loading its binary, so a missing ABI or a too-old glibc is found here, with its reason,
// and not at the first request.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type uWS from "uWebSockets.js";

export type UwsModule = typeof uWS;

export interface UwsBuild {
  readonly label: string;
  /** Its main file (uws.js), or why there is none. */
  readonly main: () => string | { readonly missing: string };
}

export type UwsChoice =
  { readonly uws: UwsModule; readonly label: string; readonly refused: readonly string[] } | { readonly uws?: undefined; readonly refused: readonly string[] };

const require = createRequire(import.meta.url);
const LOCAL = fileURLToPath(new URL("../.cache/uws/", import.meta.url));

const published: UwsBuild = {
  label: "uWebSockets.js 20.57 (@btc-vision build)",
  main: () => {
    try {
      return require.resolve("uWebSockets.js");
    } catch {
      return { missing: "not installed" };
    }
  },
};

/** The build of scripts/uws-build.sh, one folder a version; why it is missing when the build failed. */
export function localBuild(dir = LOCAL): UwsBuild {
  const versions = existsSync(dir) ? readdirSync(dir).filter((v) => existsSync(path.join(dir, v, "uws.js"))) : [];
  const version = versions.sort().at(-1);
  return {
    label: `uWebSockets${version ? ` ${version}` : ""} (built here by scripts/uws-build.sh)`,
    main: () => {
      if (version) return path.join(dir, version, "uws.js");
      const why = existsSync(path.join(dir, "why-not"))
        ? readFileSync(path.join(dir, "why-not"), "utf8").trim()
        : "not built (npm install runs scripts/uws-build.sh)";
      return { missing: why };
    },
  };
}

/** In order of preference. */
export const UWS_BUILDS: readonly UwsBuild[] = [published, localBuild()];

/** The first build whose binary loads here, and why each one before it did not. */
export function loadUws(builds: readonly UwsBuild[] = UWS_BUILDS, load: (file: string) => unknown = require, abi = process.versions.modules): UwsChoice {
  const refused: string[] = [];
  const binary = `uws_${process.platform}_${process.arch}_${abi}.node`;
  for (const b of builds) {
    const main = b.main();
    if (typeof main !== "string") {
      refused.push(`${b.label}: ${main.missing}`);
      continue;
    }
    const file = path.join(path.dirname(main), binary);
    if (!existsSync(file)) {
      refused.push(`${b.label}: no build for this Node (${binary})`);
      continue;
    }
    try {
      load(file);
      return { uws: load(main) as UwsModule, label: b.label, refused };
    } catch (e) {
      // e.g. "version `GLIBC_2.38' not found": the last line says which.
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
