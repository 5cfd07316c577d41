// Uniqueness claims (an organization slug, a user email, a preset slug): a record naming the record
// that holds the name, written before it in the same commit. The store keeps only that order
// (store/port.ts), so a claim can outlive a create that died or lost a later condition: an orphan.
import type { StoredRecord } from "./store/port.js";

/** How long an orphan claim still blocks: its create may be in flight. */
export const CLAIM_GRACE_MS = 60_000;

/** Part of every claim value; claims written before it carry none and count as old. */
export interface ClaimStamp {
  readonly createdAt?: number;
}

/** Whether a claim whose holder is missing may still be completed by its writer. */
export const inGrace = (claim: StoredRecord<ClaimStamp>, now = Date.now()): boolean =>
  claim.value.createdAt !== undefined && now - claim.value.createdAt < CLAIM_GRACE_MS;
