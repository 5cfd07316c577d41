// Protection of an output: its scheme and DRM systems, and where its key material lives on the node.
import path from "node:path";
import type { DrmScheme, DrmSystemName } from "../../src/drm/types.js";
import { EncryptionScheme, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { DRM_SYSTEM_NAMES, drmSchemeOf as checkedSchemeOf } from "../../src/spec-check.js";

/** The scheme an output is protected with, the default filled in: aes128 on ts HLS, else cbcs; undefined when clear. */
export function drmSchemeOf(spec: OutputSpec): DrmScheme | undefined {
  const scheme = checkedSchemeOf(spec);
  if (scheme === undefined) return undefined;
  return scheme === EncryptionScheme.CENC ? "cenc" : scheme === EncryptionScheme.AES_128 ? "aes128" : "cbcs";
}

/** The DRM systems an output is signalled for, in the order asked, each once. */
export function drmSystemsOf(spec: OutputSpec): DrmSystemName[] {
  const names = (spec.drm?.systems ?? []).map((s) => DRM_SYSTEM_NAMES[s]).filter((n): n is DrmSystemName => n !== undefined);
  return [...new Set(names)];
}

/** Folder for an output's key material: beside its dir, never inside it, so the uploader cannot see it. */
export const secretsDirOf = (dir: string) => path.join(path.dirname(dir), `${path.basename(dir)}.keys`);
