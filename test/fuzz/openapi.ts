// Builds the OpenAPI document the fuzz test feeds to schemathesis: the published description
// (wire/openapi.ts over protoc-gen-connect-openapi's output, generated at test time so it never
// drifts from the contract; clients/openapi.json is the same document, held fresh by
// test/clients/openapi.test.ts), narrowed to what schemathesis can drive:
//   - unary methods only: a JSON body sent with a streaming content type is not enveloped, and
//     schemathesis cannot read enveloped answers; the test probes Watch by hand instead (enveloped
//     requests, answer must end, no hang);
//   - no security scheme, server or organization header: the passes pass their own headers;
//   - the answers the host gives before Connect sees a call (405, 415, CORS's 204), and the
//     binary and streaming content types, whose bytes are not checked here.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { publishOpenApi, STREAMING, type Schema } from "../../wire/openapi.js";
import { generateRaw } from "../../scripts/openapi.js";

/** The published document narrowed for schemathesis (see the top of this file). */
export function fuzzDocument(published: Schema): Schema {
  const paths: Record<string, Schema> = {};
  for (const [p, item] of Object.entries<Schema>(published.paths)) {
    const op = structuredClone(item.post) as Schema;
    if (op[STREAMING]) continue;
    delete op.security;
    op.parameters = (op.parameters ?? []).filter((param: Schema) => param.name !== "X-Organization-ID");
    op.responses["405"] = { description: "Method not allowed (host)" };
    op.responses["415"] = { description: "Unsupported content type (host)" };
    op.responses["204"] = { description: "CORS preflight (OPTIONS)" };
    // A binary (application/proto) caller gets a binary answer; its bytes are not checked here.
    // Streaming content types get enveloped answers (an end-stream error frame for a unary method).
    if (op.responses["200"]?.content)
      for (const ct of ["application/proto", "application/connect+json", "application/grpc-web+json"]) op.responses["200"].content[ct] = {};
    paths[p] = { post: op };
  }
  const { security: _security, servers: _servers, ...rest } = published;
  const { securitySchemes: _schemes, ...components } = published.components;
  return { ...rest, security: [], info: { title: "media.v1 (spec JSON mapping, fuzz)", version: "1" }, paths, components };
}

/** Generates, rewrites and writes the document; returns its path and the unary routes in it. */
export function buildOpenApi(dir: string): { file: string; routes: string[]; streaming: string[] } {
  const raw = generateRaw();
  const doc = fuzzDocument(publishOpenApi(raw));
  const file = path.join(dir, "media.fuzz.openapi.json");
  writeFileSync(file, JSON.stringify(doc, null, 1));
  const streaming = Object.keys(raw.paths).filter((p) => !doc.paths[p]);
  return { file, routes: Object.keys(doc.paths), streaming };
}
