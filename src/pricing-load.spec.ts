// The pricing table is built when its module loads, and a cell that is not a whole micro-EUR stops
// the load. Imported inside the test, so a table that cannot be built fails here as a test (a spec
// that imports the module at its top would fail to load and report no test at all).
import { expect, it } from "vitest";

it("builds the whole table when the module loads", async () => {
  const { pricingTable, rateMicrosPerMinute } = await import("./pricing.js");
  expect(pricingTable()).toHaveLength(4 * 6 * 3 * 3);
  expect(rateMicrosPerMinute("h265", "1080p", "economy", "60")).toBe(20_250); // 18,000 × 75 % × 150 %
  expect(rateMicrosPerMinute("vp9", "480p", "premium", "240")).toBe(19_200); // 6,400 × 150 % × 200 %
});
