// The published OpenAPI 3.1 description of the JSON the service speaks (clients/openapi.json, served
// at GET /openapi.json): protoc-gen-connect-openapi's output for proto/ (scripts/openapi.ts runs it),
// rewritten to the spec's JSON mapping as wire/codec.ts reads and writes it:
//   - proto field names (snake_case), which the generator already emits (with-proto-names);
//   - enum values as lowercase strings without the enum's prefix (`unspecified` for 0): protobuf
//     JSON's JOB_STATUS_COMPLETED is not what this service reads or writes;
//   - 64-bit integers as JSON numbers only (the generator allows strings too);
//   - message and timestamp fields nullable (null is "unset" both ways);
//   - response schemas (suffix `.Out`) requiring every field the service always emits (scalars,
//     lists, maps, enums, messages as null), so a client may rely on them;
//   - unary methods as POST /media.v1.<Service>/<Method> with application/json; errors as Connect's
//     JSON error whose `details` carry media.v1.ErrorDetails (base64 of its binary form);
//   - the server-streaming Watch methods as Connect streams (application/connect+json, each message
//     in a 5-byte envelope), marked `x-connect-streaming: server-stream`: OpenAPI has no word for
//     the envelope, so a generated client cannot call them; the SDKs in clients/ do.
// The fuzz test narrows this document to what schemathesis can drive (test/fuzz/openapi.ts).
import type { DescEnum, DescFile, DescMessage } from "@bufbuild/protobuf";
import { enumWireName, isOmittedWhenUnset } from "./codec.js";
import * as apiKey from "../src/gen/media/v1/api_key_pb.js";
import * as app from "../src/gen/media/v1/app_pb.js";
import * as common from "../src/gen/media/v1/common_pb.js";
import * as health from "../src/gen/media/v1/health_pb.js";
import * as job from "../src/gen/media/v1/job_pb.js";
import * as organization from "../src/gen/media/v1/organization_pb.js";
import * as origin from "../src/gen/media/v1/origin_pb.js";
import * as preset from "../src/gen/media/v1/preset_pb.js";
import * as user from "../src/gen/media/v1/user_pb.js";
import * as video from "../src/gen/media/v1/video_pb.js";
import * as webhook from "../src/gen/media/v1/webhook_pb.js";

export type Schema = Record<string, any>;

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

export const REF = "#/components/schemas/";
const OUT = ".Out";
/** Marks an operation that is a Connect server stream (not callable as plain JSON over HTTP). */
export const STREAMING = "x-connect-streaming";

const DESCRIPTION = [
  "The media.v1 API as it speaks JSON: every method is `POST /media.v1.<Service>/<Method>` with a JSON body",
  "(the Connect protocol's unary JSON mapping). Field names are the proto's (snake_case); enum values are",
  "lowercase names without the enum's prefix (`completed`, not `JOB_STATUS_COMPLETED`), so a Connect client",
  "generated from proto/ must use the binary codec (application/proto), which the SDKs in clients/ choose;",
  "this document describes the JSON. 64-bit integers are JSON numbers; an unset message or timestamp is null.",
  "Errors are Connect errors whose `details` carry a `media.v1.ErrorDetails` (base64 of its binary form)",
  "with `field_violations`. The Watch methods are Connect server streams, marked `x-connect-streaming`.",
].join(" ");

/** The raw generator document rewritten to the spec's mapping (see the top of this file). */
export function publishOpenApi(raw: Schema): Schema {
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
  // The error detail every error carries, named (the generator leaves `value` untyped).
  const any = out["connect.error_details.Any"];
  if (any?.properties?.value) any.properties.value.description += " Here always a media.v1.ErrorDetails (type `media.v1.ErrorDetails`).";

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

  const orgHeader = {
    name: "X-Organization-ID",
    in: "header",
    required: false,
    description:
      "The organization acted on (org_…). Required by every method but HealthService/Check, UserService/GetMe and UpdateMe, OrganizationService/Create and CheckSlug (invalid_argument naming the header without it).",
    schema: { type: "string" },
  };
  const paths: Record<string, Schema> = {};
  for (const [p, item] of Object.entries<Schema>(raw.paths)) {
    const op = structuredClone(item.post) as Schema;
    const streaming = !op.requestBody?.content?.["application/json"];
    const type = streaming ? "application/connect+json" : "application/json";
    const keep = (content: Schema | undefined) => (content?.[type] ? { [type]: content[type] } : content);
    op.requestBody.content = keep(op.requestBody.content);
    for (const r of Object.values<Schema>(op.responses ?? {})) if (r.content) r.content = keep(r.content);
    const ok = op.responses?.["200"]?.content?.[type]?.schema;
    if (ok?.$ref) ok.$ref = REF + toOut(ok.$ref.slice(REF.length));
    // Connect-Protocol-Version is optional for this service; Connect-Timeout-Ms stays as generated.
    op.parameters = [...(op.parameters ?? []).map((param: Schema) => ({ ...param, required: false })), orgHeader];
    if (p === "/media.v1.HealthService/Check") op.security = [];
    if (streaming) {
      op[STREAMING] = "server-stream";
      op.description = [
        op.description,
        "A Connect server stream: the request and every answer are enveloped (1 flag byte, 4 length bytes, the JSON);",
        "the last envelope (flag 2) carries the end of the stream and any error. Use an SDK in clients/ or `buf curl`.",
      ]
        .filter(Boolean)
        .join(" ");
    }
    paths[p] = { post: op };
  }
  return {
    openapi: raw.openapi,
    info: { title: "media.v1", version: "v1", description: DESCRIPTION },
    servers: [{ url: "/", description: "The gateway that serves this document" }],
    security: [{ apiKey: [] }],
    tags: raw.tags,
    paths,
    components: {
      schemas: out,
      securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: "An API key (ak_…) or a portal session token" } },
    },
  };
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
