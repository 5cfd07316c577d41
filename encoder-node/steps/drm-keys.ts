// A protected output's content keys, from its key provider, before any encode: a provider that
// fails stops the output, so nothing leaves clear. And the job's sealed record of them.
import type { DrmKeysData } from "../../actors/job/messages.js";
import { keyProviderFor, sealKeys } from "../../src/drm/keys.js";
import { DrmKeyError, trackClassOf, type ContentKey, type TrackClass } from "../../src/drm/types.js";
import type { OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import type { Logger } from "../../src/log.js";
import type { NetGuard } from "../../src/net-guard.js";
import type { SecretBox } from "../../src/secrets.js";
import { MediaError } from "../media-errors.js";
import { drmSchemeOf, drmSystemsOf, type OutputPlan } from "../plan.js";

/** The keys of a protected output: one per track class it has (one for all with aes_128, which ffmpeg applies per command). */
export async function contentKeys(
  d: { readonly guard: NetGuard; readonly log: Logger },
  spec: OutputSpec,
  outputId: string,
  plan: OutputPlan,
  signal: AbortSignal,
): Promise<ContentKey[]> {
  const drm = spec.drm!;
  const scheme = drmSchemeOf(spec)!;
  // The packager encrypts each stream with its class's key; ffmpeg's aes_128 has one key per output.
  const order: TrackClass[] = ["audio", "sd", "hd"];
  const present = new Set((plan.packaging?.streams ?? []).map((st) => st.trackClass));
  const classes =
    scheme === "aes128"
      ? [trackClassOf("video", Math.max(0, ...(plan.renditions ?? []).map((r) => Math.min(r.width, r.height))))]
      : order.filter((c) => present.has(c));
  try {
    return await keyProviderFor(drm, { guard: d.guard, log: d.log }).keys({
      resourceId: drm.resourceId || outputId,
      classes,
      scheme,
      systems: drmSystemsOf(spec),
      signal,
    });
  } catch (e) {
    if (e instanceof DrmKeyError) throw new MediaError("drm_key_unavailable", e.message);
    throw e;
  }
}

/** What the job keeps of an output's keys: the scheme, the key ids, the keys sealed with the server secret. */
export const drmKeysData = (box: SecretBox, spec: OutputSpec, keys: readonly ContentKey[]): DrmKeysData => ({
  scheme: drmSchemeOf(spec)!,
  clearKey: drmSchemeOf(spec) === "aes128" || drmSystemsOf(spec).includes("clearkey"),
  kids: keys.map((k) => ({ trackClass: k.trackClass, kid: k.kid })),
  sealed: sealKeys(box, keys),
});
