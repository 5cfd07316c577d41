// Walks every response message of the contract and checks the spec's JSON emission rules, both
// for an empty message and for one with every field set, so a new field cannot break them.
import { create, ScalarType, type DescField, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import * as apiKey from "../src/gen/media/v1/api_key_pb.js";
import * as app from "../src/gen/media/v1/app_pb.js";
import * as health from "../src/gen/media/v1/health_pb.js";
import * as job from "../src/gen/media/v1/job_pb.js";
import * as organization from "../src/gen/media/v1/organization_pb.js";
import * as origin from "../src/gen/media/v1/origin_pb.js";
import * as preset from "../src/gen/media/v1/preset_pb.js";
import * as user from "../src/gen/media/v1/user_pb.js";
import * as video from "../src/gen/media/v1/video_pb.js";
import * as webhook from "../src/gen/media/v1/webhook_pb.js";
import { isNullWhenUnset, readJson, writeJson } from "./codec.js";

const services: DescService[] = [
  apiKey.APIKeyService, app.AppService, health.HealthService, job.JobService, organization.OrganizationService,
  origin.OriginService, preset.PresetService, user.UserService, video.VideoService, webhook.WebhookService,
];

function reachable(roots: DescMessage[]): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (m: DescMessage) => {
    if (seen.has(m.typeName) || m.typeName.startsWith("google.protobuf.")) return;
    seen.set(m.typeName, m);
    for (const f of m.fields) {
      if (f.message) visit(f.message);
    }
  };
  roots.forEach(visit);
  return [...seen.values()];
}

const responses = reachable(services.flatMap((s) => s.methods.map((m) => m.output)));
const requests = reachable(services.flatMap((s) => s.methods.map((m) => m.input)));

const isOptional = (f: DescField) =>
  f.oneof === undefined && (f.fieldKind === "message" ? f.proto.proto3Optional === true : (f.fieldKind === "scalar" || f.fieldKind === "enum") && f.presence === 1);
const isTimestamp = (f: DescField) => f.message?.typeName === "google.protobuf.Timestamp";

function sampleScalar(t: ScalarType): unknown {
  switch (t) {
    case ScalarType.STRING:
      return "x";
    case ScalarType.BOOL:
      return true;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return 1.5;
    case ScalarType.BYTES:
      return new Uint8Array([1, 2]);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return 5_368_709_120n; // 5 GB: past 32 bits, as upload sizes are
    default:
      return 7;
  }
}

/** Every field set, one level of nesting deep for messages (deeper stays unset). */
function populated(desc: DescMessage, depth = 0): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  for (const f of desc.fields) {
    let v: unknown;
    if (f.fieldKind === "scalar") v = sampleScalar(f.scalar);
    else if (f.fieldKind === "enum") v = f.enum.values[1]?.number ?? 0;
    else if (f.fieldKind === "message") v = isTimestamp(f) ? { seconds: 1_800_000_000n, nanos: 0 } : depth < 2 ? populated(f.message, depth + 1) : undefined;
    else if (f.fieldKind === "list") v = f.listKind === "scalar" ? [sampleScalar(f.scalar)] : f.listKind === "enum" ? [f.enum.values[1]?.number ?? 0] : [];
    else v = f.mapKind === "scalar" ? { k: sampleScalar(f.scalar) } : {};
    if (v === undefined) continue;
    if (f.oneof) {
      if (init[f.oneof.localName] === undefined) init[f.oneof.localName] = { case: f.localName, value: v };
    } else init[f.localName] = v;
  }
  return init;
}

describe("spec JSON emission, every response message of the contract", () => {
  it("covers the contract", () => {
    expect(responses.length).toBeGreaterThan(60);
  });

  for (const desc of responses) {
    it(`${desc.typeName}: empty message follows the emission table`, () => {
      const json = JSON.parse(writeJson(desc, create(desc))) as Record<string, unknown>;
      for (const f of desc.fields) {
        if (f.oneof) {
          expect(json, `${f.name} (oneof member, unset)`).not.toHaveProperty(f.name);
          continue;
        }
        if (isNullWhenUnset(f)) {
          expect(json[f.name], `${f.name} ("string or null" in the spec)`).toBeNull();
          continue;
        }
        if (isOptional(f)) {
          expect(json, `${f.name} (unset optional field is omitted)`).not.toHaveProperty(f.name);
          continue;
        }
        expect(json, `${f.name} is always present`).toHaveProperty(f.name);
        const v = json[f.name];
        if (f.fieldKind === "message") expect(v, `${f.name}: unset message/timestamp is null`).toBeNull();
        else if (f.fieldKind === "list") expect(v, `${f.name}: repeated is []`).toEqual([]);
        else if (f.fieldKind === "map") expect(v, `${f.name}: map is {}`).toEqual({});
        else if (f.fieldKind === "enum") expect(v, `${f.name}: enum default`).toBe("unspecified");
        else if (f.scalar === ScalarType.STRING || f.scalar === ScalarType.BYTES) expect(v).toBe("");
        else if (f.scalar === ScalarType.BOOL) expect(v).toBe(false);
        else expect(v, `${f.name}: numbers are JSON numbers`).toBe(0);
      }
      for (const key of Object.keys(json)) expect(key, "snake_case names").toMatch(/^[a-z][a-z0-9_]*$/);
    });

    it(`${desc.typeName}: set fields are lowercase enums, numeric 64-bit ints, RFC 3339 times`, () => {
      const json = JSON.parse(writeJson(desc, create(desc, populated(desc) as never))) as Record<string, unknown>;
      for (const f of desc.fields) {
        if (f.oneof && !(f.name in json)) continue;
        const v = json[f.name];
        expect(v, `${f.name} present when set`).not.toBeUndefined();
        if (f.fieldKind === "enum") expect(v).toMatch(/^[a-z0-9_]+$/);
        if (f.fieldKind === "enum") expect(v).not.toBe("unspecified");
        if (f.fieldKind === "scalar" && [ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64].includes(f.scalar)) expect(v).toBe(5_368_709_120);
        if (isTimestamp(f)) expect(v).toBe("2027-01-15T08:00:00.000Z");
      }
    });
  }
});

describe("spec JSON reading", () => {
  for (const desc of requests) {
    it(`${desc.typeName}: what we write, we read back unchanged`, () => {
      const message = create(desc, populated(desc) as never);
      const read = readJson(desc, writeJson(desc, message));
      expect(read.ok).toBe(true);
      if (read.ok) expect(writeJson(desc, read.message)).toBe(writeJson(desc, message));
    });
  }

  it("names the field at fault, with its path", () => {
    const read = readJson(user.ListUsersRequestSchema, JSON.stringify({ status: "bogus", pagination: { limit: "ten" }, extra: 1 }));
    expect(read.ok).toBe(false);
    if (!read.ok) {
      expect(read.violations.map((v) => v.field).sort()).toEqual(["extra", "pagination.limit", "status"]);
    }
  });

  it("accepts 64-bit integers as numbers and strings, refuses fractions", () => {
    const desc = video.CreateUploadRequestSchema;
    expect(readJson(desc, JSON.stringify({ size_bytes: 5368709120 })).ok).toBe(true);
    expect(readJson(desc, JSON.stringify({ size_bytes: "5368709120" })).ok).toBe(true);
    expect(readJson(desc, JSON.stringify({ size_bytes: 1.5 })).ok).toBe(false);
  });

  it("writes the spec's \"string or null\" job fields as null when unset", () => {
    const json = JSON.parse(writeJson(job.JobSchema, create(job.JobSchema))) as Record<string, unknown>;
    expect(json.video_id).toBeNull();
    expect(json.output_path_template).toBeNull();
    expect(JSON.parse(writeJson(job.JobSchema, create(job.JobSchema, { videoId: "vid_1", outputPathTemplate: "{job_id}" })))).toMatchObject({ video_id: "vid_1", output_path_template: "{job_id}" });
  });

  it("omits the timestamps the spec calls omitted, and nulls the others", () => {
    const json = JSON.parse(writeJson(apiKey.ApiKeySchema, create(apiKey.ApiKeySchema))) as Record<string, unknown>;
    for (const omitted of ["last_used_at", "expires_at", "revoked_at", "description"]) expect(json).not.toHaveProperty(omitted);
    expect(json.created_at).toBeNull();
  });

  it("refuses malformed timestamps", () => {
    const read = readJson(apiKey.CreateApiKeyRequestSchema, JSON.stringify({ name: "a", expires_at: "tomorrow" }));
    expect(read.ok ? [] : read.violations.map((v) => v.field)).toEqual(["expires_at"]);
  });
});
