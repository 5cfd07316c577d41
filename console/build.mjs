// Builds the web console: one bundle of console/src (Preact, the Connect clients generated from
// proto/) and its stylesheet, named by their content hash so the gateway caches them for a year,
// and the index.html that names them. Runs at `npm install` (postinstall) and takes under a second.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.join(here, "dist");

const result = await build({
  entryPoints: [path.join(here, "src/main.tsx"), path.join(here, "src/style.css")],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  write: false,
  outdir: out,
  legalComments: "none",
  logLevel: "warning",
});

rmSync(out, { recursive: true, force: true });
mkdirSync(path.join(out, "assets"), { recursive: true });
const names = {};
for (const file of result.outputFiles) {
  const ext = path.extname(file.path);
  const hash = createHash("sha256").update(file.contents).digest("base64url").slice(0, 12);
  const name = `${path.basename(file.path, ext)}-${hash}${ext}`;
  writeFileSync(path.join(out, "assets", name), file.contents);
  writeFileSync(path.join(out, "assets", `${name}.gz`), gzipSync(file.contents, { level: 9 }));
  names[ext] = name;
}
const template = readFileSync(path.join(here, "src/index.html"), "utf8");
writeFileSync(path.join(out, "index.html"), template.replace("%CSS%", `/console/assets/${names[".css"]}`).replace("%JS%", `/console/assets/${names[".js"]}`));
