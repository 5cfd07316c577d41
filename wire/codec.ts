// The spec's JSON mapping, both ways: snake_case names, lowercase enum strings with `unspecified`
// defaults, scalars, lists and maps always present, null for unset messages and timestamps,
// unset optional scalars omitted, 64-bit integers as JSON numbers. Reading names the field at fault.
import { create, fromJson, toJson, ScalarType, type DescEnum, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { FieldViolation } from "../src/errors.js";

const TIMESTAMP = "google.protobuf.Timestamp";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Wire name of an enum value: its proto name without the enum's prefix, lowercased. */
export function enumWireName(e: DescEnum, number: number): string {
  const value = e.value[number];
  if (!value) return "unspecified";
  return stripPrefix(e, value.name);
}

const prefixes = new WeakMap<DescEnum, string>();
function enumPrefix(e: DescEnum): string {
  let p = prefixes.get(e);
  if (p === undefined) {
    p = e.name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase() + "_";
    prefixes.set(e, p);
  }
  return p;
}
function stripPrefix(e: DescEnum, name: string): string {
  const p = enumPrefix(e);
  return (name.startsWith(p) ? name.slice(p.length) : name).toLowerCase();
}

const byWireName = new WeakMap<DescEnum, Map<string, number>>();
function enumNumber(e: DescEnum, text: string): number | undefined {
  let map = byWireName.get(e);
  if (!map) {
    map = new Map();
    for (const v of e.values) {
      map.set(stripPrefix(e, v.name), v.number);
      map.set(v.name, v.number); // the canonical protobuf JSON name is accepted too
    }
    byWireName.set(e, map);
  }
  return map.get(text);
}

// ───────────────────────────── writing ─────────────────────────────

/**
 * The message's spec JSON text: JSON.stringify(messageToJson(desc, message)), byte for byte, written
 * by a plan made once per message type (a Watch update goes out as JSON thousands of times a second).
 */
export function writeJson(desc: DescMessage, message: Message): string {
  return messageText(desc, message);
}

// ─────────────────── writing text: one plan per message type ───────────────────

type Writer = (value: unknown) => string;
const plans = new WeakMap<DescMessage, Writer>();

function messageText(desc: DescMessage, message: unknown): string {
  let write = plans.get(desc);
  if (write === undefined) plans.set(desc, (write = messagePlan(desc)));
  return write(message);
}

function messagePlan(desc: DescMessage): Writer {
  if (desc.typeName === TIMESTAMP) return (m) => `"${timestampToJson(m as { seconds: bigint; nanos: number })}"`;
  if (desc.typeName.startsWith("google.protobuf.")) return (m) => JSON.stringify(toJson(desc, m as Message));
  const fields = desc.fields.map((field) => ({
    key: `${JSON.stringify(field.name)}:`,
    oneof: field.oneof?.localName,
    localName: field.localName,
    omitted: isOmittedWhenUnset(field),
    nullWhenUnset: isNullWhenUnset(field),
    write: fieldPlan(field),
  }));
  return (message) => {
    const m = message as Record<string, unknown>;
    let text = "{";
    let sep = "";
    for (const f of fields) {
      let value: unknown;
      if (f.oneof !== undefined) {
        const o = m[f.oneof] as { case?: string; value?: unknown } | undefined;
        if (o?.case !== f.localName) continue;
        value = o.value;
      } else value = m[f.localName];
      if (value === undefined && f.omitted) {
        if (f.nullWhenUnset) ((text += `${sep}${f.key}null`), (sep = ","));
        continue;
      }
      text += sep + f.key + f.write(value);
      sep = ",";
    }
    return `${text}}`;
  };
}

function fieldPlan(field: DescField): Writer {
  switch (field.fieldKind) {
    case "scalar":
      return scalarPlan(field.scalar);
    case "enum":
      return enumPlan(field.enum);
    case "message": {
      const desc = field.message;
      return (v) => (v === undefined ? "null" : messageText(desc, v));
    }
    case "list": {
      const item = field.listKind === "scalar" ? scalarPlan(field.scalar) : field.listKind === "enum" ? enumPlan(field.enum) : messagePlanOf(field.message);
      return (v) => `[${((v as unknown[] | undefined) ?? []).map((x) => item(x)).join(",")}]`;
    }
    case "map": {
      const item = field.mapKind === "scalar" ? scalarPlan(field.scalar) : field.mapKind === "enum" ? enumPlan(field.enum) : messagePlanOf(field.message);
      return (v) => {
        const parts: string[] = [];
        for (const [k, x] of Object.entries((v as Record<string, unknown> | undefined) ?? {})) {
          if (k === "__proto__") continue; // assigning it to an object sets no key, so JSON.stringify has none
          parts.push(`${JSON.stringify(k)}:${item(x)}`);
        }
        return `{${parts.join(",")}}`;
      };
    }
  }
}

const messagePlanOf =
  (desc: DescMessage): Writer =>
  (v) =>
    messageText(desc, v);

function enumPlan(e: DescEnum): Writer {
  const names = new Map(e.values.map((v) => [v.number, JSON.stringify(stripPrefix(e, v.name))]));
  return (v) => names.get((v as number | undefined) ?? 0) ?? JSON.stringify(enumWireName(e, v as number));
}

function scalarPlan(type: ScalarType): Writer {
  switch (type) {
    case ScalarType.STRING:
    case ScalarType.BOOL:
    case ScalarType.BYTES:
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v) => JSON.stringify(scalarToJson(type, v));
    default:
      // Integers: JSON.stringify of a number is its String(), and null when not finite.
      return (v) => {
        const n = v === undefined ? 0 : Number(v as number | bigint | string);
        return Number.isFinite(n) ? String(n) : "null";
      };
  }
}

/** `optional` in the proto means "omitted when unset" on the wire: scalars, and the timestamps
 * and objects the spec describes as omitted rather than null. */
export function isOmittedWhenUnset(field: DescField): boolean {
  if (field.oneof !== undefined) return false;
  if (field.fieldKind === "message") return field.proto.proto3Optional === true;
  return (field.fieldKind === "scalar" || field.fieldKind === "enum") && field.presence === 1;
}

/** Optional scalars the spec shows as "string or null" / "number or null": null when unset, not omitted. */
const NULL_WHEN_UNSET: ReadonlySet<string> = new Set([
  "media.v1.Job.output_path_template",
  "media.v1.Job.video_id",
  "media.v1.CostBreakdown.total_estimated_cost",
  "media.v1.CostBreakdown.total_actual_cost",
]);

export const isNullWhenUnset = (field: DescField): boolean => NULL_WHEN_UNSET.has(`${field.parent.typeName}.${field.name}`);

export function messageToJson(desc: DescMessage, message: Message): Json {
  if (desc.typeName === TIMESTAMP) return timestampToJson(message as unknown as { seconds: bigint; nanos: number });
  if (desc.typeName.startsWith("google.protobuf.")) return toJson(desc, message) as Json;
  const m = message as unknown as Record<string, unknown>;
  const out: Record<string, Json> = {};
  for (const field of desc.fields) {
    let value: unknown;
    if (field.oneof) {
      const o = m[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (o?.case !== field.localName) continue;
      value = o.value;
    } else {
      value = m[field.localName];
    }
    if (value === undefined && isOmittedWhenUnset(field)) {
      if (isNullWhenUnset(field)) out[field.name] = null;
      continue;
    }
    out[field.name] = fieldToJson(field, value);
  }
  return out;
}

function fieldToJson(field: DescField, value: unknown): Json {
  switch (field.fieldKind) {
    case "scalar":
      return scalarToJson(field.scalar, value);
    case "enum":
      return enumWireName(field.enum, (value as number | undefined) ?? 0);
    case "message":
      return value === undefined ? null : messageToJson(field.message, value as Message);
    case "list": {
      const list = (value as unknown[] | undefined) ?? [];
      switch (field.listKind) {
        case "scalar":
          return list.map((v) => scalarToJson(field.scalar, v));
        case "enum":
          return list.map((v) => enumWireName(field.enum, v as number));
        case "message":
          return list.map((v) => messageToJson(field.message, v as Message));
      }
      break;
    }
    case "map": {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries((value as Record<string, unknown> | undefined) ?? {})) {
        out[k] =
          field.mapKind === "scalar"
            ? scalarToJson(field.scalar, v)
            : field.mapKind === "enum"
              ? enumWireName(field.enum, v as number)
              : messageToJson(field.message, v as Message);
      }
      return out;
    }
  }
  return null;
}

function scalarToJson(type: ScalarType, value: unknown): Json {
  switch (type) {
    case ScalarType.STRING:
      return (value as string | undefined) ?? "";
    case ScalarType.BOOL:
      return (value as boolean | undefined) ?? false;
    case ScalarType.BYTES:
      return Buffer.from((value as Uint8Array | undefined) ?? new Uint8Array()).toString("base64");
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = (value as number | undefined) ?? 0;
      return Number.isFinite(n) ? n : String(n);
    }
    default:
      // 32- and 64-bit integers alike are JSON numbers (sizes reach 5 GB, well inside 2^53).
      return value === undefined ? 0 : Number(value as number | bigint | string);
  }
}

function timestampToJson(ts: { seconds: bigint; nanos: number }): string {
  const ms = Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1_000_000);
  return new Date(ms).toISOString();
}

// ───────────────────────────── reading ─────────────────────────────

export type ReadResult<T> = { ok: true; message: T } | { ok: false; violations: FieldViolation[] };

export function readJson<T extends Message>(desc: DescMessage, text: string): ReadResult<T> {
  let parsed: unknown;
  try {
    parsed = text.trim() === "" ? {} : JSON.parse(text);
  } catch (e) {
    return { ok: false, violations: [{ field: "", description: `body is not valid JSON: ${(e as Error).message}` }] };
  }
  const violations: FieldViolation[] = [];
  const init = readMessage(desc, parsed, "", violations);
  if (violations.length > 0) return { ok: false, violations };
  return { ok: true, message: create(desc, init as never) as unknown as T };
}

const join = (path: string, name: string) => (path === "" ? name : `${path}.${name}`);

function readMessage(desc: DescMessage, json: unknown, path: string, out: FieldViolation[]): unknown {
  if (desc.typeName === TIMESTAMP) return readTimestamp(json, path, out);
  if (desc.typeName.startsWith("google.protobuf.")) {
    try {
      return fromJson(desc, json as never);
    } catch (e) {
      out.push({ field: path, description: (e as Error).message });
      return undefined;
    }
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    out.push({ field: path === "" ? "body" : path, description: "must be a JSON object" });
    return undefined;
  }
  const init: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.name === key || f.jsonName === key);
    const fieldPath = join(path, key);
    if (!field) {
      out.push({ field: fieldPath, description: "unknown field" });
      continue;
    }
    if (value === null) continue; // null means unset for every field kind
    const read = readField(field, value, join(path, field.name), out);
    if (read === undefined) continue;
    if (field.oneof) {
      if (init[field.oneof.localName] !== undefined) {
        out.push({ field: fieldPath, description: `only one of ${field.oneof.fields.map((f) => f.name).join(", ")} may be set` });
        continue;
      }
      init[field.oneof.localName] = { case: field.localName, value: read };
    } else {
      init[field.localName] = read;
    }
  }
  return init;
}

function readField(field: DescField, value: unknown, path: string, out: FieldViolation[]): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return readScalar(field.scalar, field.longAsString, value, path, out);
    case "enum":
      return readEnum(field.enum, value, path, out);
    case "message":
      return readMessage(field.message, value, path, out);
    case "list": {
      if (!Array.isArray(value)) {
        out.push({ field: path, description: "must be an array" });
        return undefined;
      }
      return value.map((v, i) => {
        const p = `${path}[${i}]`;
        if (field.listKind === "scalar") return readScalar(field.scalar, field.longAsString, v, p, out);
        if (field.listKind === "enum") return readEnum(field.enum, v, p, out);
        return readMessage(field.message, v, p, out);
      });
    }
    case "map": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        out.push({ field: path, description: "must be a JSON object" });
        return undefined;
      }
      const map: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const p = `${path}.${k}`;
        map[k] =
          field.mapKind === "scalar"
            ? readScalar(field.scalar, false, v, p, out)
            : field.mapKind === "enum"
              ? readEnum(field.enum, v, p, out)
              : readMessage(field.message, v, p, out);
      }
      return map;
    }
  }
}

function readEnum(e: DescEnum, value: unknown, path: string, out: FieldViolation[]): number | undefined {
  if (typeof value !== "string") {
    out.push({ field: path, description: "must be a string" });
    return undefined;
  }
  const n = enumNumber(e, value);
  if (n === undefined) {
    const allowed = e.values.filter((v) => v.number !== 0).map((v) => stripPrefix(e, v.name));
    out.push({ field: path, description: `unknown value "${value}"; expected one of ${allowed.join(", ")}` });
  }
  return n;
}

const INT_RANGES: Partial<Record<ScalarType, readonly [number, number]>> = {
  [ScalarType.INT32]: [-2147483648, 2147483647],
  [ScalarType.SINT32]: [-2147483648, 2147483647],
  [ScalarType.SFIXED32]: [-2147483648, 2147483647],
  [ScalarType.UINT32]: [0, 4294967295],
  [ScalarType.FIXED32]: [0, 4294967295],
};
const UNSIGNED_64 = new Set([ScalarType.UINT64, ScalarType.FIXED64]);

function readScalar(type: ScalarType, longAsString: boolean, value: unknown, path: string, out: FieldViolation[]): unknown {
  const fail = (what: string) => {
    out.push({ field: path, description: `must be ${what}` });
    return undefined;
  };
  switch (type) {
    case ScalarType.STRING:
      return typeof value === "string" ? value : fail("a string");
    case ScalarType.BOOL:
      return typeof value === "boolean" ? value : fail("a boolean");
    case ScalarType.BYTES:
      return typeof value === "string" && /^[A-Za-z0-9+/_-]*={0,2}$/.test(value) ? Buffer.from(value, "base64") : fail("base64");
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return typeof value === "number" && Number.isFinite(value) ? value : fail("a number");
  }
  const n = typeof value === "number" ? value : typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : NaN;
  const range = INT_RANGES[type];
  if (range) {
    if (!Number.isInteger(n)) return fail("an integer");
    if (n < range[0] || n > range[1]) return fail(`an integer between ${range[0]} and ${range[1]}`);
    return n;
  }
  if (!Number.isSafeInteger(n) || (UNSIGNED_64.has(type) && n < 0)) return fail("an integer");
  return longAsString ? String(n) : BigInt(n);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

function readTimestamp(value: unknown, path: string, out: FieldViolation[]): unknown {
  const ms = typeof value === "string" && RFC3339.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms)) {
    out.push({ field: path, description: "must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z" });
    return undefined;
  }
  const fraction = /\.(\d{1,9})/.exec(value as string)?.[1] ?? "";
  const nanos = Number(fraction.padEnd(9, "0") || "0");
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos };
}
