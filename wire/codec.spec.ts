// Walks every response message of the contract and checks the spec's JSON emission rules, both
// for an empty message and for one with every field set, so a new field cannot break them.
import { create, createFileRegistry, ScalarType, type DescField, type DescFile, type DescMessage, type DescService, type Message } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FieldOptions_JSType,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
  file_google_protobuf_timestamp,
} from "@bufbuild/protobuf/wkt";
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
import { enumWireName, isNullWhenUnset, isOmittedWhenUnset, messageToJson, readJson, writeJson } from "./codec.js";

const services: DescService[] = [
  apiKey.APIKeyService,
  app.AppService,
  health.HealthService,
  job.JobService,
  organization.OrganizationService,
  origin.OriginService,
  preset.PresetService,
  user.UserService,
  video.VideoService,
  webhook.WebhookService,
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
  f.oneof === undefined &&
  (f.fieldKind === "message" ? f.proto.proto3Optional === true : (f.fieldKind === "scalar" || f.fieldKind === "enum") && f.presence === 1);
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

  it('writes the spec\'s "string or null" job fields as null when unset', () => {
    const json = JSON.parse(writeJson(job.JobSchema, create(job.JobSchema))) as Record<string, unknown>;
    expect(json.video_id).toBeNull();
    expect(json.output_path_template).toBeNull();
    expect(JSON.parse(writeJson(job.JobSchema, create(job.JobSchema, { videoId: "vid_1", outputPathTemplate: "{job_id}" })))).toMatchObject({
      video_id: "vid_1",
      output_path_template: "{job_id}",
    });
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

// ───────────── every field kind, on a message built for the test ─────────────
// The contract has no uint32, uint64, bytes, float or jstype=JS_STRING fields, yet the codec reads
// them; this file descriptor has one field of each kind, so their rules are tested too.
const T = FieldDescriptorProto_Type;
const scalarField = (name: string, number: number, type: FieldDescriptorProto_Type, extra: Record<string, unknown> = {}) => ({
  name,
  number,
  type,
  label: FieldDescriptorProto_Label.OPTIONAL,
  jsonName: name.replace(/_(.)/g, (_, c: string) => c.toUpperCase()),
  ...extra,
});
const typed = (name: string, number: number, type: FieldDescriptorProto_Type, typeName: string, repeated = false) =>
  scalarField(name, number, type, { typeName, ...(repeated ? { label: FieldDescriptorProto_Label.REPEATED } : {}) });
const mapEntry = (name: string, value: Record<string, unknown>) => ({
  name,
  field: [scalarField("key", 1, T.STRING), { ...value, name: "value", number: 2, jsonName: "value" }],
  options: { mapEntry: true },
});
const testFile = create(FileDescriptorProtoSchema, {
  name: "codec_test.proto",
  package: "codectest",
  syntax: "proto3",
  dependency: ["google/protobuf/timestamp.proto", "google/protobuf/duration.proto"],
  // A digit before a capital in the enum name: the prefix of "Test2Color" is TEST2_COLOR_.
  enumType: [
    {
      name: "Test2Color",
      value: [
        { name: "TEST2_COLOR_UNSPECIFIED", number: 0 },
        { name: "TEST2_COLOR_DARK_RED", number: 1 },
        { name: "OTHER", number: 2 },
      ],
    },
  ],
  messageType: [
    { name: "Inner", field: [scalarField("name", 1, T.STRING)] },
    {
      name: "All",
      field: [
        scalarField("s", 1, T.STRING),
        scalarField("b", 2, T.BOOL),
        scalarField("i32", 3, T.INT32),
        scalarField("si32", 4, T.SINT32),
        scalarField("sf32", 5, T.SFIXED32),
        scalarField("u32", 6, T.UINT32),
        scalarField("f32", 7, T.FIXED32),
        scalarField("i64", 8, T.INT64),
        scalarField("u64", 9, T.UINT64),
        scalarField("si64", 10, T.SINT64),
        scalarField("f64", 11, T.FIXED64),
        scalarField("sf64", 12, T.SFIXED64),
        scalarField("d", 13, T.DOUBLE),
        scalarField("f", 14, T.FLOAT),
        scalarField("by", 15, T.BYTES),
        scalarField("i64s", 16, T.INT64, { options: { jstype: FieldOptions_JSType.JS_STRING } }),
        typed("color", 17, T.ENUM, ".codectest.Test2Color"),
        typed("colors", 18, T.ENUM, ".codectest.Test2Color", true),
        scalarField("tags", 19, T.STRING, { label: FieldDescriptorProto_Label.REPEATED }),
        typed("inners", 20, T.MESSAGE, ".codectest.Inner", true),
        typed("counts", 21, T.MESSAGE, ".codectest.All.CountsEntry", true),
        typed("color_map", 22, T.MESSAGE, ".codectest.All.ColorMapEntry", true),
        typed("inner_map", 23, T.MESSAGE, ".codectest.All.InnerMapEntry", true),
        typed("inner", 24, T.MESSAGE, ".codectest.Inner"),
        typed("at", 25, T.MESSAGE, ".google.protobuf.Timestamp"),
        typed("took", 26, T.MESSAGE, ".google.protobuf.Duration"),
        scalarField("a", 27, T.STRING, { oneofIndex: 0 }),
        scalarField("n", 28, T.INT32, { oneofIndex: 0 }),
        scalarField("maybe", 29, T.STRING, { oneofIndex: 1, proto3Optional: true }),
        { ...typed("opt_inner", 30, T.MESSAGE, ".codectest.Inner"), oneofIndex: 2, proto3Optional: true },
        { ...typed("opt_color", 31, T.ENUM, ".codectest.Test2Color"), oneofIndex: 3, proto3Optional: true },
      ],
      oneofDecl: [{ name: "pick" }, { name: "_maybe" }, { name: "_opt_inner" }, { name: "_opt_color" }],
      nestedType: [
        mapEntry("CountsEntry", scalarField("value", 2, T.INT32)),
        mapEntry("ColorMapEntry", typed("value", 2, T.ENUM, ".codectest.Test2Color")),
        mapEntry("InnerMapEntry", typed("value", 2, T.MESSAGE, ".codectest.Inner")),
      ],
    },
  ],
});
const wkt: Record<string, DescFile> = {
  "google/protobuf/timestamp.proto": file_google_protobuf_timestamp,
  "google/protobuf/duration.proto": file_google_protobuf_duration,
};
const All = createFileRegistry(testFile, (name) => wkt[name]).getMessage("codectest.All")!;

const read = (json: unknown, desc: DescMessage = All) => readJson<Message>(desc, JSON.stringify(json));
const faults = (json: unknown, desc: DescMessage = All) => {
  const r = read(json, desc);
  return r.ok ? [] : r.violations;
};
/** What reading `json` gives back on the wire: the read value as the codec writes it. */
const echo = (json: unknown, desc: DescMessage = All) => {
  const r = read(json, desc);
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return JSON.parse(writeJson(desc, r.message)) as Record<string, unknown>;
};

describe("null means unset (survivor 9: `if (value === null) continue` removed)", () => {
  it("reads null as the default for every field kind of the contract's requests", () => {
    const r = read({ name: null, description: null, expires_at: null, app_id: null, scopes: null }, apiKey.CreateApiKeyRequestSchema);
    expect(r.ok).toBe(true);
    if (r.ok) expect(JSON.parse(writeJson(apiKey.CreateApiKeyRequestSchema, r.message))).toEqual({ name: "", app_id: "", scopes: [] });
    expect(faults({ include_revoked: null, pagination: null }, apiKey.ListApiKeysRequestSchema)).toEqual([]);
    expect(faults({ status: null, pagination: { limit: null, offset: null } }, user.ListUsersRequestSchema)).toEqual([]);
  });

  it("reads null as unset for scalars, enums, lists, maps, messages, timestamps and oneof members", () => {
    const nulls = Object.fromEntries(All.fields.map((f) => [f.name, null]));
    expect(echo(nulls)).toEqual(JSON.parse(writeJson(All, create(All))));
    // A null oneof member does not occupy the oneof.
    expect(echo({ a: null, n: 3 })).toMatchObject({ n: 3 });
    expect(echo({ a: null, n: 3 })).not.toHaveProperty("a");
  });

  it("null inside a list or map is not unset: it is a value of the wrong type", () => {
    expect(faults({ tags: ["x", null] })).toEqual([{ field: "tags[1]", description: "must be a string" }]);
    expect(faults({ counts: { k: null } })).toEqual([{ field: "counts.k", description: "must be an integer" }]);
  });
});

describe("type checks name the field (survivor 9: a scalar's typeof check made always true)", () => {
  it.each([
    ["s", 5, "must be a string"],
    ["s", { x: 1 }, "must be a string"],
    ["s", true, "must be a string"],
    ["s", ["x"], "must be a string"],
    ["b", 1, "must be a boolean"],
    ["b", "true", "must be a boolean"],
    ["b", { x: 1 }, "must be a boolean"],
    ["d", "1.5", "must be a number"],
    ["f", true, "must be a number"],
    ["by", 5, "must be base64"],
    ["by", "not base64!", "must be base64"],
    ["i32", 1.5, "must be an integer"],
    ["i32", "1.5", "must be an integer"],
    ["i32", "1e3", "must be an integer"],
    ["i32", true, "must be an integer"],
    ["i64", { x: 1 }, "must be an integer"],
    ["i64", "12a", "must be an integer"],
    ["color", 1, "must be a string"],
    ["inner", "x", "must be a JSON object"],
    ["inner", [], "must be a JSON object"],
    ["tags", "x", "must be an array"],
    ["counts", [], "must be a JSON object"],
    ["counts", "x", "must be a JSON object"],
  ])("%s: %j is refused (%s)", (field, value, description) => {
    expect(faults({ [field]: value })).toEqual([{ field, description }]);
  });

  it("refuses numbers and objects for the contract's string and bool fields, naming each", () => {
    expect(faults({ name: 5, description: { text: "x" } }, apiKey.CreateApiKeyRequestSchema)).toEqual([
      { field: "name", description: "must be a string" },
      { field: "description", description: "must be a string" },
    ]);
    expect(faults({ include_revoked: 1 }, apiKey.ListApiKeysRequestSchema)).toEqual([{ field: "include_revoked", description: "must be a boolean" }]);
    expect(faults({ include_revoked: {} }, apiKey.ListApiKeysRequestSchema)).toEqual([{ field: "include_revoked", description: "must be a boolean" }]);
    expect(faults({ pagination: { cursor: 7 } }, apiKey.ListApiKeysRequestSchema)).toEqual([{ field: "pagination.cursor", description: "must be a string" }]);
  });

  it("paths name list items and map entries", () => {
    expect(
      faults({ inners: [{ name: "a" }, { name: 1 }], inner_map: { k: { name: 2 } }, color_map: { c: "mauve" }, colors: ["dark_red", 3] }).map((v) => v.field),
    ).toEqual(["inners[1].name", "inner_map.k.name", "color_map.c", "colors[1]"]);
  });

  it("reads a body that is empty, not JSON, or not an object", () => {
    expect(readJson(All, "").ok).toBe(true);
    expect(readJson(All, "  \n").ok).toBe(true);
    const bad = readJson(All, "{nope");
    expect(bad.ok ? [] : bad.violations.map((v) => [v.field, v.description.startsWith("body is not valid JSON: ")])).toEqual([["", true]]);
    for (const body of ["[]", "3", '"x"', "null"]) expect(faults(JSON.parse(body)), body).toEqual([{ field: "body", description: "must be a JSON object" }]);
  });

  it("accepts the JSON (camelCase) name as well as the proto name, and refuses unknown fields", () => {
    expect(echo({ colorMap: { c: "other" }, i64s: 1 })).toMatchObject({ color_map: { c: "other" }, i64s: 1 });
    expect(faults({ inner: { name: "x", nope: 1 } })).toEqual([{ field: "inner.nope", description: "unknown field" }]);
    // A fault under a camelCase key is reported under the proto name.
    expect(faults({ colorMap: { c: 1 } })).toEqual([{ field: "color_map.c", description: "must be a string" }]);
  });

  it("refuses two members of one oneof", () => {
    expect(faults({ a: "x", n: 1 })).toEqual([{ field: "n", description: "only one of a, n may be set" }]);
    expect(echo({ n: 0 })).toMatchObject({ n: 0 });
  });
});

describe("enums", () => {
  it("reads wire names and canonical proto names, writes wire names", () => {
    expect(echo({ color: "dark_red", colors: ["TEST2_COLOR_DARK_RED", "other", "OTHER"], color_map: { x: "dark_red" } })).toMatchObject({
      color: "dark_red",
      colors: ["dark_red", "other", "other"],
      color_map: { x: "dark_red" },
    });
    expect(faults({ color: "purple" })).toEqual([{ field: "color", description: 'unknown value "purple"; expected one of dark_red, other' }]);
    expect(faults({ color: "DARK_RED" })).toHaveLength(1); // the prefix-less upper-case form is neither name
  });

  it("writes an unknown enum number as unspecified", () => {
    expect(enumWireName(All.field.color!.enum!, 99)).toBe("unspecified");
    expect(JSON.parse(writeJson(All, create(All, { color: 99 } as never)))).toMatchObject({ color: "unspecified" });
  });
});

describe("integer ranges (survivor 10)", () => {
  it.each([
    ["i32", -2147483648, 2147483647],
    ["si32", -2147483648, 2147483647],
    ["sf32", -2147483648, 2147483647],
    ["u32", 0, 4294967295],
    ["f32", 0, 4294967295],
  ])("%s takes %d to %d and refuses one past either end", (field, min, max) => {
    expect(echo({ [field]: min })).toMatchObject({ [field]: min });
    expect(echo({ [field]: max })).toMatchObject({ [field]: max });
    expect(echo({ [field]: String(max) })).toMatchObject({ [field]: max });
    const description = `must be an integer between ${min} and ${max}`;
    expect(faults({ [field]: min - 1 })).toEqual([{ field, description }]);
    expect(faults({ [field]: max + 1 })).toEqual([{ field, description }]);
    expect(faults({ [field]: String(min - 1) })).toEqual([{ field, description }]);
  });

  it("refuses a negative uint64 and fixed64, as number or string", () => {
    for (const field of ["u64", "f64"]) {
      expect(faults({ [field]: -1 })).toEqual([{ field, description: "must be an integer" }]);
      expect(faults({ [field]: "-1" })).toEqual([{ field, description: "must be an integer" }]);
      expect(echo({ [field]: 0 })).toMatchObject({ [field]: 0 });
    }
    for (const field of ["i64", "si64", "sf64"]) expect(echo({ [field]: -5368709120 })).toMatchObject({ [field]: -5368709120 });
  });

  it("takes 64-bit integers up to 2^53 - 1 and refuses what a JSON number cannot hold exactly", () => {
    expect(echo({ i64: Number.MAX_SAFE_INTEGER, u64: "9007199254740991" })).toMatchObject({ i64: Number.MAX_SAFE_INTEGER, u64: Number.MAX_SAFE_INTEGER });
    expect(faults({ i64: "9007199254740992" })).toEqual([{ field: "i64", description: "must be an integer" }]);
    expect(faults({ si64: -Number.MAX_SAFE_INTEGER - 2 })).toEqual([{ field: "si64", description: "must be an integer" }]);
  });

  it("keeps a jstype=JS_STRING int64 as a string in the message and a number on the wire", () => {
    const r = read({ i64s: "5368709120", i64: "5368709120" });
    expect(r.ok && (r.message as unknown as { i64s: unknown; i64: unknown })).toEqual(expect.objectContaining({ i64s: "5368709120", i64: 5368709120n }));
    expect(echo({ i64s: 5368709120 })).toMatchObject({ i64s: 5368709120 });
  });

  it("ints in maps and lists are range-checked too", () => {
    expect(faults({ counts: { a: 1, b: 2147483648 } })).toEqual([{ field: "counts.b", description: "must be an integer between -2147483648 and 2147483647" }]);
  });
});

describe("floating point, bytes and well-known types", () => {
  it("writes non-finite doubles as strings and reads finite numbers back", () => {
    expect(JSON.parse(writeJson(All, create(All, { d: Number.NaN, f: Number.POSITIVE_INFINITY } as never)))).toMatchObject({ d: "NaN", f: "Infinity" });
    expect(JSON.parse(writeJson(All, create(All, { d: Number.NEGATIVE_INFINITY } as never)))).toMatchObject({ d: "-Infinity" });
    expect(echo({ d: -0.25, f: 1.5 })).toMatchObject({ d: -0.25, f: 1.5 });
  });

  it("refuses a number JSON reads as infinite", () => {
    const r = readJson(All, '{"d": 1e999}');
    expect(r.ok ? [] : r.violations).toEqual([{ field: "d", description: "must be a number" }]);
  });

  it("reads standard and URL-safe base64, writes standard base64", () => {
    expect(echo({ by: "AQID/w==" })).toMatchObject({ by: "AQID/w==" });
    expect(echo({ by: "AQID_w" })).toMatchObject({ by: "AQID/w==" });
    expect(echo({ by: "" })).toMatchObject({ by: "" });
    expect(faults({ by: "AQ===" })).toEqual([{ field: "by", description: "must be base64" }]);
  });

  it("passes other google.protobuf types to the protobuf JSON mapping, naming the field on error", () => {
    expect(echo({ took: "1.5s" })).toMatchObject({ took: "1.500s" });
    const bad = faults({ took: "soon" });
    expect(bad.map((v) => v.field)).toEqual(["took"]);
    expect(bad[0]!.description).toMatch(/duration/i);
  });
});

describe("timestamps (survivor 10: sub-second precision)", () => {
  const at = (text: string) => {
    const r = read({ at: text });
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    const ts = (r.message as unknown as { at: { seconds: bigint; nanos: number } }).at;
    return [ts.seconds, ts.nanos] as const;
  };

  it.each([
    ["2026-01-31T12:00:00Z", 0],
    ["2026-01-31T12:00:00.5Z", 500_000_000],
    ["2026-01-31T12:00:00.05Z", 50_000_000],
    ["2026-01-31T12:00:00.123Z", 123_000_000],
    ["2026-01-31T12:00:00.123456Z", 123_456_000],
    ["2026-01-31T12:00:00.123456789Z", 123_456_789],
    ["2026-01-31T12:00:00.000000001Z", 1],
    ["2026-01-31T12:00:00.999999999Z", 999_999_999],
  ])("reads %s to the nanosecond", (text, nanos) => {
    expect(at(text)).toEqual([1_769_860_800n, nanos]);
  });

  it("reads offsets, lower-case separators and times before 1970", () => {
    expect(at("2026-01-31T14:00:00.25+02:00")).toEqual([1_769_860_800n, 250_000_000]);
    expect(at("2026-01-31T10:30:00-01:30")).toEqual([1_769_860_800n, 0]);
    expect(at("2026-01-31t12:00:00z")).toEqual([1_769_860_800n, 0]);
    expect(at("1969-12-31T23:59:59.5Z")).toEqual([-1n, 500_000_000]);
  });

  it("writes milliseconds, flooring finer fractions, so what it writes reads back unchanged", () => {
    const write = (seconds: bigint, nanos: number) => (JSON.parse(writeJson(All, create(All, { at: { seconds, nanos } } as never))) as { at: string }).at;
    expect(write(1_769_860_800n, 500_000_000)).toBe("2026-01-31T12:00:00.500Z");
    expect(write(1_769_860_800n, 123_456_789)).toBe("2026-01-31T12:00:00.123Z");
    expect(write(1_769_860_800n, 999_999_999)).toBe("2026-01-31T12:00:00.999Z");
    expect(write(-1n, 500_000_000)).toBe("1969-12-31T23:59:59.500Z");
    for (const text of ["2026-01-31T12:00:00.500Z", "2026-01-31T12:00:00.123Z", "2026-01-31T12:00:00.001Z", "1969-12-31T23:59:59.500Z"]) {
      expect(echo({ at: text }).at).toBe(text);
    }
    expect(JSON.parse(writeJson(All, create(All)))).toMatchObject({ at: null, inner: null });
  });

  it.each([
    "2026-01-31",
    "2026-01-31T12:00:00",
    "2026-01-31 12:00:00Z",
    "2026-01-31T12:00:00.Z",
    "2026-01-31T12:00:00.1234567890Z",
    "2026-01-31T12:00:00+0200",
    "2026-13-01T00:00:00Z",
    "x2026-01-31T12:00:00Z",
    "2026-01-31T12:00:00Zx",
  ])("refuses %s", (text) => {
    expect(faults({ at: text })).toEqual([{ field: "at", description: "must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z" }]);
  });

  it("refuses a timestamp that is not a string", () => {
    expect(faults({ at: 1_769_860_800 })).toEqual([{ field: "at", description: "must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z" }]);
    expect(faults({ at: { seconds: 1 } }).map((v) => v.field)).toEqual(["at"]);
  });
});

describe("writing", () => {
  it("writes every scalar kind at its default, and omits an unset optional", () => {
    const json = JSON.parse(writeJson(All, create(All))) as Record<string, unknown>;
    expect(json).toMatchObject({
      s: "",
      b: false,
      i32: 0,
      u32: 0,
      i64: 0,
      u64: 0,
      i64s: 0,
      d: 0,
      f: 0,
      by: "",
      color: "unspecified",
      colors: [],
      tags: [],
      inners: [],
      counts: {},
      color_map: {},
      inner_map: {},
    });
    expect(json).not.toHaveProperty("maybe");
    expect(json).not.toHaveProperty("a");
    expect(echo({ maybe: "" })).toMatchObject({ maybe: "" });
  });

  it("writes what it reads for lists and maps of every kind", () => {
    const value = {
      tags: ["a", "b"],
      inners: [{ name: "x" }],
      counts: { a: 1 },
      color_map: { a: "other" },
      inner_map: { a: { name: "y" } },
      u64: 5368709120,
      s: "é",
      b: true,
    };
    expect(echo(value)).toMatchObject(value);
  });

  it("isOmittedWhenUnset: only proto3 optional fields outside real oneofs", () => {
    const omitted = All.fields.filter(isOmittedWhenUnset).map((f) => f.name);
    expect(omitted).toEqual(["maybe", "opt_inner", "opt_color"]);
    const json = JSON.parse(writeJson(All, create(All))) as Record<string, unknown>;
    for (const name of omitted) expect(json).not.toHaveProperty(name);
    expect(echo({ opt_inner: {}, opt_color: "unspecified" })).toMatchObject({ opt_inner: { name: "" }, opt_color: "unspecified" });
  });

  it('writes the cost totals the spec shows as "number or null" as null when unset', () => {
    expect(JSON.parse(writeJson(job.CostBreakdownSchema, create(job.CostBreakdownSchema)))).toEqual({
      lines: [],
      total_estimated_cost: null,
      total_actual_cost: null,
    });
    expect(JSON.parse(writeJson(job.CostBreakdownSchema, create(job.CostBreakdownSchema, { totalActualCost: 0 })))).toMatchObject({
      total_estimated_cost: null,
      total_actual_cost: 0,
    });
  });
});

// writeJson writes text from a plan per message type; messageToJson (the webhooks' objects) builds
// the same JSON as objects. The text must be JSON.stringify of the object, byte for byte.
describe("the text writer and the object writer agree", () => {
  const same = (desc: DescMessage, message: Message) => expect(writeJson(desc, message)).toBe(JSON.stringify(messageToJson(desc, message)));

  for (const desc of [...responses, ...requests]) {
    it(`${desc.typeName}, empty and with every field set`, () => {
      same(desc, create(desc));
      same(desc, create(desc, populated(desc) as never));
    });
  }

  it("on values JSON must escape or cannot hold: quotes, controls, lone surrogates, NaN, -0, infinities, 64-bit extremes, unknown enums", () => {
    const nasty = ['"\\\n\t\u0000\u2028', "\ud800", "a\udfffb", "\ud83d\ude00", "é"];
    for (const s of nasty) {
      same(
        All,
        create(All, { s, tags: [s, s], inners: [{ name: s }], counts: { [s]: 1 }, inner_map: { [s]: { name: s } }, pick: { case: "a", value: s } } as never),
      );
    }
    for (const d of [NaN, -0, Infinity, -Infinity, 1e21, 5e-324, 0.1 + 0.2]) same(All, create(All, { d, f: d, i32: d, u32: d } as never));
    for (const i64 of [2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n + 1n])
      same(All, create(All, { i64, si64: i64, sf64: i64, pick: { case: "n", value: -7 } } as never));
    same(All, create(All, { u64: 2n ** 64n - 1n, u32: 4294967295, by: new Uint8Array([0, 255, 128]) } as never));
    same(All, create(All, { color: 99, colors: [0, 1, 2, 42], color_map: { x: 77 }, optColor: 5 } as never));
    same(All, create(All, { at: { seconds: -1n, nanos: 999_999_999 }, took: { seconds: 3n, nanos: 5 }, maybe: "", optInner: {} } as never));
  });

  it("on map keys JSON.stringify reorders or drops: integer-like keys first, __proto__ never", () => {
    const counts = JSON.parse('{"b":1,"10":2,"a":3,"2":4,"__proto__":5,"-1":6,"01":7}') as Record<string, number>;
    const message = create(All, { counts } as never);
    (message as unknown as { counts: Record<string, number> }).counts = counts; // as parsed: __proto__ an own key
    same(All, message);
  });
});
