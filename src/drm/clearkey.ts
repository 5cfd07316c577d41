// W3C Clear Key (Encrypted Media Extensions, "Clear Key" section): the license request a CDM sends,
// {"kids": [base64url key IDs], "type": "temporary"}, and the JSON Web Key Set that answers it,
// {"keys": [{"kty": "oct", "kid": ..., "k": ...}], "type": "temporary"}. Clear Key raises the bar
// (the keys travel only to a viewer holding a valid playback token), it is not studio DRM: the key
// reaches the page's JavaScript.
import { HEX16, type ContentKey } from "./types.js";

export const DRM_LIMITS = {
  /** A request names a handful of key IDs: 16 in 4 KiB is plenty. */
  licenseRequestBytes: 4096,
  licenseRequestKids: 16,
};

const B64URL_16 = /^[A-Za-z0-9_-]{22}$/;

/** The key IDs (lowercase hex) a license request asks for; undefined when it is not a Clear Key request. */
export function clearKeyRequest(body: Uint8Array): string[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null || !Array.isArray((parsed as { kids?: unknown }).kids)) return undefined;
  const kids = (parsed as { kids: unknown[] }).kids;
  if (kids.length === 0 || kids.length > DRM_LIMITS.licenseRequestKids) return undefined;
  const hex: string[] = [];
  for (const kid of kids) {
    if (typeof kid !== "string" || !B64URL_16.test(kid)) return undefined;
    hex.push(Buffer.from(kid, "base64url").toString("hex"));
  }
  return hex;
}

/** The JSON Web Key Set of `keys`, in the form the Clear Key CDM reads. */
export function clearKeyLicense(keys: readonly ContentKey[]): { keys: { kty: "oct"; kid: string; k: string }[]; type: "temporary" } {
  return {
    keys: keys.map((k) => {
      if (!HEX16.test(k.kid) || !HEX16.test(k.key)) throw new Error("a content key is not 16 bytes of hex");
      return { kty: "oct" as const, kid: Buffer.from(k.kid, "hex").toString("base64url"), k: Buffer.from(k.key, "hex").toString("base64url") };
    }),
    type: "temporary",
  };
}
