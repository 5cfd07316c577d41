// The uWS builds as they are installed: on this Node and this C library, the published build is tried
// first and its refusal is named; the loader's choice follows what loads, not the version number.
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadUws, localBuild, UWS_BUILDS } from "./uws-loader.js";

const glibcMinor = Number(
  /GLIBC 2\.(\d+)|2\.(\d+)$/m
    .exec(execFileSync("ldd", ["--version"]).toString().split("\n")[0]!)
    ?.slice(1)
    .find(Boolean) ?? 0,
);

describe("which uWebSockets.js build serves", () => {
  it("on this machine: the published build where it loads, else the one built here, each refusal before it named", () => {
    const found = loadUws();
    expect(found.uws).toBeDefined();
    if (glibcMinor < 38) {
      // Debian 12 (glibc 2.36): the published 20.57 needs 2.38, so the build of npm install serves.
      expect(found).toMatchObject({ label: UWS_BUILDS[1]!.label });
      expect(found.refused).toEqual([expect.stringMatching(/^uWebSockets\.js 20\.57 .*GLIBC_2\.38/)]);
    } else {
      expect(found).toMatchObject({ label: UWS_BUILDS[0]!.label, refused: [] });
    }
    expect(typeof found.uws!.App).toBe("function");
  });

  it("on a Node the local build was not made for, says so by the binary's name", () => {
    const found = loadUws([UWS_BUILDS[1]!], undefined, "999");
    expect(found).toEqual({ refused: [`${UWS_BUILDS[1]!.label}: no build for this Node (uws_${process.platform}_${process.arch}_999.node)`] });
  });

  it("names why the local build is missing: the build script's own line, else that it was not built", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "uws-loader-"));
    try {
      expect(loadUws([localBuild(dir)])).toEqual({
        refused: ["uWebSockets (built here by scripts/uws-build.sh): not built (npm install runs scripts/uws-build.sh)"],
      });
      writeFileSync(path.join(dir, "why-not"), "no C/C++ compiler: install gcc and g++\n");
      expect(loadUws([localBuild(dir)]).refused).toEqual(["uWebSockets (built here by scripts/uws-build.sh): no C/C++ compiler: install gcc and g++"]);
      mkdirSync(path.join(dir, "20.58.0"));
      writeFileSync(path.join(dir, "20.58.0", "uws.js"), "");
      expect(localBuild(dir).label).toBe("uWebSockets 20.58.0 (built here by scripts/uws-build.sh)");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("prefers the first build whose binary loads, and says why others did not", () => {
    const loaded: string[] = [];
    const fake = { App: () => undefined };
    const found = loadUws([{ label: "first", main: () => UWS_BUILDS[1]!.main() }, UWS_BUILDS[1]!], (file) => {
      loaded.push(file);
      if (file.endsWith(".node")) throw new Error("Error: boom\nversion `GLIBC_9.99' not found");
      return fake;
    });
    expect(found.uws).toBeUndefined();
    expect(found.refused).toEqual(["first: version `GLIBC_9.99' not found", `${UWS_BUILDS[1]!.label}: version \`GLIBC_9.99' not found`]);
    const ok = loadUws([{ label: "missing", main: () => ({ missing: "not installed" }) }, UWS_BUILDS[1]!], () => fake);
    expect(ok).toMatchObject({ uws: fake, label: UWS_BUILDS[1]!.label, refused: ["missing: not installed"] });
  });
});
