// The uWS builds as they are installed: on this Node and this C library, the newer build is tried
// first and its refusal is named; the loader's choice follows what loads, not the version number.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { loadUws, UWS_BUILDS } from "./uws-loader.js";

const glibcMinor = Number(
  /GLIBC 2\.(\d+)|2\.(\d+)$/m
    .exec(execFileSync("ldd", ["--version"]).toString().split("\n")[0]!)
    ?.slice(1)
    .find(Boolean) ?? 0,
);

describe("which uWebSockets.js build serves", () => {
  it("on this machine: the newest build that loads, each refusal before it named", () => {
    const found = loadUws();
    expect(found.uws).toBeDefined();
    if (glibcMinor < 38) {
      // Debian 12 (glibc 2.36): the repackaged 20.57 needs 2.38, so the 20.30 build serves.
      expect(found).toMatchObject({ label: UWS_BUILDS[1]!.label });
      expect(found.refused).toEqual([expect.stringMatching(/^uWebSockets\.js 20\.57 .*GLIBC_2\.38/)]);
    } else {
      expect(found).toMatchObject({ label: UWS_BUILDS[0]!.label, refused: [] });
    }
    expect(typeof found.uws!.App).toBe("function");
  });

  it("on a Node the old build has no binary for (Node 22's ABI 127), only the newer build can serve", () => {
    const found = loadUws(UWS_BUILDS, undefined, "127");
    expect(found.refused.at(-1)).toBe(`${UWS_BUILDS[1]!.label}: no build for this Node (uws_${process.platform}_${process.arch}_127.node)`);
    if (glibcMinor < 38) expect(found.uws).toBeUndefined();
  });

  it("prefers the first build whose binary loads, and says why others did not", () => {
    const loaded: string[] = [];
    const fake = { App: () => undefined };
    const found = loadUws([{ alias: "uWebSockets.js", label: "first", binaries: "../binaries" }, UWS_BUILDS[1]!], (file) => {
      loaded.push(file);
      if (file.endsWith(".node")) throw new Error("Error: boom\nversion `GLIBC_9.99' not found");
      return fake;
    });
    expect(found.uws).toBeUndefined();
    expect(found.refused).toEqual(["first: version `GLIBC_9.99' not found", `${UWS_BUILDS[1]!.label}: version \`GLIBC_9.99' not found`]);
    const ok = loadUws([{ alias: "no-such-package", label: "missing", binaries: "." }, UWS_BUILDS[1]!], () => fake);
    expect(ok).toMatchObject({ uws: fake, label: UWS_BUILDS[1]!.label, refused: ["missing: not installed"] });
  });
});
