// What the DRM specs share: the DrmKeyError a piece of work ends in.
import { expect } from "vitest";
import { DrmKeyError } from "./types.js";

/** The DrmKeyError `work` throws or rejects with; fails the spec when it ends otherwise. */
export async function drmKeyFailure(work: () => unknown): Promise<DrmKeyError> {
  const e = await Promise.resolve()
    .then(work)
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  expect(e).toBeInstanceOf(DrmKeyError);
  return e as DrmKeyError;
}
