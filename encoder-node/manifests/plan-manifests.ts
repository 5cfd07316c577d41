// A plan's manifests once its commands (and packaging) ran: aes_128's codecs read from a decrypted
// segment, the MPD finished, the HLS master written (a split ladder's waits for its join).
import path from "node:path";
import type { ContentKey } from "../../src/drm/types.js";
import type { OutputPlan } from "../plan.js";
import { readAes128Codecs } from "./aes128-codecs.js";
import { hlsFactsOf } from "./hls-facts.js";
import { writeHlsMaster } from "./hls-master.js";
import { finishMpd } from "./mpd.js";

export async function writePlanManifests(plan: OutputPlan, key: ContentKey | undefined, signal: AbortSignal): Promise<void> {
  if (plan.aes128 && key && plan.hlsMaster)
    await readAes128Codecs(plan.dir, plan.hlsMaster, hlsFactsOf(plan.hlsMaster), key, path.dirname(plan.aes128.keyInfoFile), signal);
  if (plan.dashManifest) await finishMpd(plan.dir, plan.dashManifest);
  // A chunked ladder's master waits for the join (manifests/chunk-join.ts).
  if (plan.hlsMaster && !plan.chunked) await writeHlsMaster(plan.dir, plan.hlsMaster, signal);
}
