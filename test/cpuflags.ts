// A stand-in for another processor: with MEDIA_TEST_CPUFLAGS set (for example 0, which turns off
// every SIMD path of FFmpeg's own code), every ffmpeg and ffprobe a test or the service under test
// runs, the VMAF scorer's too, starts with `-cpuflags <value>`. Tests that make their own clips must
// pass either way: a test that only passes on the processor it was written on pins the wrong thing.
// Set up once per test worker (vitest setupFiles); child processes inherit the PATH.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { vmafBinary } from "../encoder-node/vmaf.js";

const flags = process.env["MEDIA_TEST_CPUFLAGS"];
if (flags !== undefined && flags !== "" && !process.env["MEDIA_TEST_CPUFLAGS_SHIM"]) {
  const dir = mkdtempSync(path.join(tmpdir(), "cpuflags-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const shim = (name: string, real: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\nexec '${real}' -cpuflags '${flags}' "$@"\n`);
    chmodSync(file, 0o755);
    return file;
  };
  for (const tool of ["ffmpeg", "ffprobe"]) shim(tool, execFileSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).trim());
  try {
    process.env["MEDIA_VMAF_FFMPEG"] = shim("vmaf-ffmpeg", vmafBinary());
  } catch {
    // No scorer installed: the tests that need it say so themselves.
  }
  process.env["PATH"] = `${dir}${path.delimiter}${process.env["PATH"] ?? ""}`;
  process.env["MEDIA_TEST_CPUFLAGS_SHIM"] = dir;
}
