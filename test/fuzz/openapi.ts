// Builds the OpenAPI document the fuzz test feeds to schemathesis: protoc-gen-connect-openapi's
// output for proto/ (generated at test time, so it never drifts from the contract), rewritten to
// the spec's JSON mapping as wire/codec.ts reads and writes it:
//   - proto field names (snake_case), which the generator already emits (with-proto-names);
//   - enum values as lowercase strings without the enum's prefix (`unspecified` for 0);
//   - 64-bit integers as JSON numbers only (the generator allows strings too);
//   - message and timestamp fields nullable (null is "unset" both ways);
//   - response schemas (suffix `.Out`) requiring every field the service always emits (scalars,
//     lists, maps, enums, messages as null), so response conformance catches a missing field;
//   - unary methods only, POST /media.v1.<Service>/<Method>, JSON; the Connect headers optional.
// Server-streaming Watch methods are left out of the document: a JSON body sent with the
// streaming content type is not enveloped, and schemathesis cannot read enveloped answers; the
// test probes them by hand instead (enveloped requests, answer must end, no hang).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { DescEnum, DescFile, DescMessage } from "@bufbuild/protobuf";
import { enumWireName, isOmittedWhenUnset } from "../../wire/codec.js";
import { ROOT } from "../harness.js";
import * as apiKey from "../../src/gen/media/v1/api_key_pb.js";
import * as app from "../../src/gen/media/v1/app_pb.js";
import * as common from "../../src/gen/media/v1/common_pb.js";
import * as health from "../../src/gen/media/v1/health_pb.js";
import * as job from "../../src/gen/media/v1/job_pb.js";
import * as organization from "../../src/gen/media/v1/organization_pb.js";
import * as origin from "../../src/gen/media/v1/origin_pb.js";
import * as preset from "../../src/gen/media/v1/preset_pb.js";
import * as user from "../../src/gen/media/v1/user_pb.js";
import * as video from "../../src/gen/media/v1/video_pb.js";
import * as webhook from "../../src/gen/media/v1/webhook_pb.js";

type Schema = Record<string, any>;

const MODULES = [apiKey, app, common, health, job, organization, origin, preset, user, video, webhook];

function descriptors(): { messages: Map<string, DescMessage>; enums: Map<string, DescEnum> } {
  const messages = new Map<string, DescMessage>();
  const enums = new Map<string, DescEnum>();
  const addMessage = (m: DescMessage) => {
    messages.set(m.typeName, m);
    m.nestedMessages.forEach(addMessage);
    m.nestedEnums.forEach((e) => enums.set(e.typeName, e));
  };
  for (const mod of MODULES) {
    for (const value of Object.values(mod)) {
      const file = value as DescFile;
      if (file?.kind !== "file") continue;
      file.messages.forEach(addMessage);
      file.enums.forEach((e) => enums.set(e.typeName, e));
    }
  }
  return { messages, enums };
}

const REF = "#/components/schemas/";
const OUT = ".Out";

/** Runs the pinned generator through the project's buf; returns the raw document. */
export function generateRaw(dir: string): Schema {
  mkdirSync(dir, { recursive: true });
  execFileSync("npx", ["buf", "generate", "--template", "test/fuzz/buf.gen.openapi.yaml", "-o", dir], { cwd: ROOT, stdio: "pipe" });
  return JSON.parse(readFileSync(path.join(dir, "media.openapi.json"), "utf8"));
}

/** The raw document rewritten to the spec's mapping (see the top of this file). */
export function rewrite(raw: Schema): Schema {
  const { messages, enums } = descriptors();
  const src: Record<string, Schema> = raw.components.schemas;
  const out: Record<string, Schema> = {};

  const nullable = (s: Schema): Schema => {
    const { $ref, ...rest } = s;
    return { ...rest, anyOf: [{ $ref }, { type: "null" }] };
  };

  // Request flavour: the names as generated, nothing required.
  for (const [name, schema] of Object.entries(src)) {
    const e = enums.get(name);
    if (e) {
      out[name] = { type: "string", title: schema.title, enum: e.values.map((v) => enumWireName(e, v.number)) };
      continue;
    }
    const m = messages.get(name);
    if (!m || schema.type !== "object") {
      out[name] = fixScalars(structuredClone(schema));
      continue;
    }
    const props: Record<string, Schema> = {};
    for (const [prop, p] of Object.entries<Schema>(schema.properties ?? {})) {
      const field = m.fields.find((f) => f.name === prop);
      let s = fixScalars(structuredClone(p));
      if (field && field.fieldKind === "message" && s.$ref) s = nullable(s);
      props[prop] = s;
    }
    out[name] = { ...schema, properties: props };
  }
  // Well-known types: bytes are base64 strings in JSON; the generator says "binary".
  fixBinary(out);

  // Response flavour: every schema reachable from a 200 answer, `.Out`, with the always-present
  // fields required and references pointing at other `.Out` schemas.
  const toOut = (name: string): string => {
    const target = name + OUT;
    if (out[target] || !out[name]) return out[name] ? target : name;
    out[target] = {}; // reserve against cycles
    const copy = retarget(structuredClone(out[name]!), toOut);
    const m = messages.get(name);
    if (m && copy.type === "object") {
      copy.required = m.fields.filter((f) => f.oneof === undefined && !isOmittedWhenUnset(f)).map((f) => f.name);
    }
    out[target] = copy;
    return target;
  };

  const paths: Record<string, Schema> = {};
  for (const [p, item] of Object.entries<Schema>(raw.paths)) {
    const op = item.post;
    if (!op?.requestBody?.content?.["application/json"]) continue; // streaming methods (see top)
    const ok = op.responses?.["200"]?.content?.["application/json"]?.schema;
    if (ok?.$ref) ok.$ref = REF + toOut(ok.$ref.slice(REF.length));
    // Connect-Protocol-Version is optional for this service; Connect-Timeout-Ms stays as generated.
    op.parameters = (op.parameters ?? []).map((param: Schema) => ({ ...param, required: false }));
    // The host answers these before Connect sees the call, possibly without a body.
    op.responses["405"] = { description: "Method not allowed (host)" };
    op.responses["415"] = { description: "Unsupported content type (host)" };
    op.responses["204"] = { description: "CORS preflight (OPTIONS)" };
    // A binary (application/proto) caller gets a binary answer; its bytes are not checked here.
    // Streaming content types get enveloped answers (an end-stream error frame for a unary method).
    if (op.responses["200"]?.content)
      for (const ct of ["application/proto", "application/connect+json", "application/grpc-web+json"]) op.responses["200"].content[ct] = {};
    paths[p] = { post: op };
  }
  return { ...raw, info: { title: "media.v1 (spec JSON mapping, fuzz)", version: "1" }, paths, components: { ...raw.components, schemas: out } };
}

function retarget(s: any, toOut: (name: string) => string): any {
  if (Array.isArray(s)) return s.map((x) => retarget(x, toOut));
  if (s && typeof s === "object") {
    for (const [k, v] of Object.entries(s)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith(REF)) s[k] = REF + toOut(v.slice(REF.length));
      else if (k === "properties" && v && typeof v === "object") for (const [pk, pv] of Object.entries(v)) (v as any)[pk] = retarget(pv, toOut);
      else s[k] = retarget(v, toOut);
    }
  }
  return s;
}

/** 64-bit integers: JSON numbers only (the service writes numbers; the generator allows strings). */
function fixScalars(s: any): any {
  if (Array.isArray(s)) return s.map(fixScalars);
  if (!s || typeof s !== "object") return s;
  if (Array.isArray(s.type) && s.type.includes("integer") && s.type.includes("string")) {
    s.type = s.type.filter((t: string) => t !== "string");
    if (s.type.length === 1) s.type = s.type[0];
  }
  for (const [k, v] of Object.entries(s)) if (k !== "enum" && k !== "examples") s[k] = fixScalars(v);
  return s;
}

function fixBinary(schemas: Record<string, Schema>): void {
  const walk = (s: any) => {
    if (!s || typeof s !== "object") return;
    if (s.type === "string" && s.format === "binary") {
      delete s.format;
      s.contentEncoding = "base64";
    }
    Object.values(s).forEach(walk);
  };
  Object.values(schemas).forEach(walk);
}

/** Generates, rewrites and writes the document; returns its path and the unary routes in it. */
export function buildOpenApi(dir: string): { file: string; routes: string[]; streaming: string[] } {
  const raw = generateRaw(path.join(dir, "raw"));
  const doc = rewrite(raw);
  const file = path.join(dir, "media.fuzz.openapi.json");
  writeFileSync(file, JSON.stringify(doc, null, 1));
  const streaming = Object.keys(raw.paths).filter((p) => !doc.paths[p]);
  return { file, routes: Object.keys(doc.paths), streaming };
}
