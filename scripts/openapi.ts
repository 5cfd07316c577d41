// Generates clients/openapi.json from proto/: protoc-gen-connect-openapi (built by
// test/fuzz/setup.sh) through the project's buf, rewritten to the JSON the service speaks by
// wire/openapi.ts. `npx tsx scripts/openapi.ts` writes it; `--check` fails when the committed file
// is stale (test/clients/openapi.test.ts does the same).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { publishOpenApi, type Schema } from "../wire/openapi.js";

export const ROOT = path.resolve(import.meta.dirname, "..");
export const PUBLISHED = path.join(ROOT, "clients/openapi.json");
const PLUGIN = path.join(ROOT, "test/fuzz/.bin/protoc-gen-connect-openapi");

/** The generator's own document for proto/, before any rewrite. */
export function generateRaw(): Schema {
  if (!existsSync(PLUGIN)) throw new Error(`${path.relative(ROOT, PLUGIN)} is missing: run bash test/fuzz/setup.sh (or scripts/setup.sh) first`);
  const dir = mkdtempSync(path.join(tmpdir(), "media-openapi-"));
  try {
    execFileSync("npx", ["buf", "generate", "--template", "scripts/openapi.buf.gen.yaml", "-o", dir], { cwd: ROOT, stdio: "pipe" });
    return JSON.parse(readFileSync(path.join(dir, "media.openapi.json"), "utf8")) as Schema;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The published document's text, as committed. */
export const renderOpenApi = (doc: Schema): string => `${JSON.stringify(doc, null, 2)}\n`;

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  const text = renderOpenApi(publishOpenApi(generateRaw()));
  if (process.argv.includes("--check")) {
    const current = existsSync(PUBLISHED) ? readFileSync(PUBLISHED, "utf8") : "";
    if (current !== text) {
      console.error("clients/openapi.json is stale: run npx tsx scripts/openapi.ts");
      process.exit(1);
    }
  } else {
    writeFileSync(PUBLISHED, text);
    console.log(`wrote ${path.relative(ROOT, PUBLISHED)}`);
  }
}
