// Content keys: the built-in random provider, the choice of provider for an output, and the keys
// sealed with the server secret for the job's journal (the edge's key server opens them).
import { randomBytes } from "node:crypto";
import type { Logger } from "../log.js";
import type { NetGuard } from "../net-guard.js";
import type { SecretBox } from "../secrets.js";
import { newKid, spekeKeyProvider } from "./speke.js";
import { DrmKeyError, HEX16, type ContentKey, type KeyProvider, type TrackClass } from "./types.js";

/** Random keys made here: one 16-byte key per requested class, under a random UUID-shaped key ID. */
export function localKeyProvider(): KeyProvider {
  return {
    keys: async (request) => {
      request.signal?.throwIfAborted();
      return request.classes.map((trackClass) => ({ trackClass, kid: newKid(), key: randomBytes(16).toString("hex") }));
    },
  };
}

/** The output's key provider: its SPEKE v2 key service when it names one, else the built-in one. */
export function keyProviderFor(drm: { readonly keyProviderUrl: string }, deps: { readonly guard: NetGuard; readonly log?: Logger }): KeyProvider {
  if (drm.keyProviderUrl === "") return localKeyProvider();
  return spekeKeyProvider({ url: drm.keyProviderUrl, guard: deps.guard, ...(deps.log ? { log: deps.log } : {}) });
}

// ───────────────────────────── sealed keys ─────────────────────────────

/** Bumped when the sealed shape changes; a value of another version does not open. */
const SEALED_VERSION = 1;
const CLASSES: Readonly<Record<TrackClass, true>> = { audio: true, sd: true, hd: true };
const FIELDS = new Set(["trackClass", "kid", "key", "iv"]);
const isTrackClass = (v: unknown): v is TrackClass => typeof v === "string" && Object.hasOwn(CLASSES, v);

/** The keys encrypted and authenticated with the server secret: safe to journal, useless without it. */
export function sealKeys(box: SecretBox, keys: readonly ContentKey[]): string {
  const checked = contentKeysOf(keys, "content keys to seal");
  return box.encrypt(JSON.stringify({ v: SEALED_VERSION, keys: checked }));
}

/** The keys of a sealed value; DrmKeyError when it was tampered with, sealed elsewhere or is malformed. */
export function openKeys(box: SecretBox, sealed: string): ContentKey[] {
  let plain: string;
  try {
    plain = box.decrypt(sealed);
  } catch {
    throw new DrmKeyError("sealed content keys do not open: altered, truncated, or sealed with another server secret");
  }
  let doc: unknown;
  try {
    doc = JSON.parse(plain);
  } catch {
    throw new DrmKeyError("sealed content keys are not JSON");
  }
  if (typeof doc !== "object" || doc === null || !("v" in doc) || doc.v !== SEALED_VERSION || !("keys" in doc)) {
    throw new DrmKeyError(`sealed content keys are not of version ${SEALED_VERSION}`);
  }
  return contentKeysOf(doc.keys, "sealed content keys");
}

/** `value` as content keys, each field checked and copied; DrmKeyError naming what is wrong otherwise. */
function contentKeysOf(value: unknown, what: string): ContentKey[] {
  if (!Array.isArray(value) || value.length === 0) throw new DrmKeyError(`${what}: expected a non-empty list`);
  const kids = new Set<string>();
  const classes = new Set<string>();
  return value.map((entry: unknown, i) => {
    const bad = (problem: string) => new DrmKeyError(`${what}: key ${i} ${problem}`);
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw bad("is not an object");
    const fields: Record<string, unknown> = { ...entry };
    const extra = Object.keys(fields).find((f) => !FIELDS.has(f));
    if (extra !== undefined) throw bad(`has an unknown field "${extra.slice(0, 40)}"`);
    const { trackClass, kid, key, iv } = fields;
    if (!isTrackClass(trackClass)) throw bad("has no track class audio, sd or hd");
    if (typeof kid !== "string" || !HEX16.test(kid)) throw bad("has a key ID that is not 32 lowercase hex digits");
    if (typeof key !== "string" || !HEX16.test(key)) throw bad("has a key that is not 32 lowercase hex digits");
    if (iv !== undefined && (typeof iv !== "string" || !HEX16.test(iv))) throw bad("has an IV that is not 32 lowercase hex digits");
    if (kids.has(kid)) throw bad("repeats a key ID");
    if (classes.has(trackClass)) throw bad(`repeats the track class ${trackClass}`);
    kids.add(kid);
    classes.add(trackClass);
    return { trackClass, kid, key, ...(iv === undefined ? {} : { iv }) };
  });
}
