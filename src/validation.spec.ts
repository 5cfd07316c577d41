// Check: each rule at its limit and one past it, each violation naming its field.
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Prefix } from "./ids.js";
import { Check, LIMITS } from "./validation.js";

const found = (run: (c: Check) => unknown) => {
  const check = new Check();
  run(check);
  return check.violations;
};

describe("Check", () => {
  it("add records a violation and returns the check, so rules chain", () => {
    const check = new Check();
    expect(check.add("a", "x").add("b", "y")).toBe(check);
    expect(check.violations).toEqual([
      { field: "a", description: "x" },
      { field: "b", description: "y" },
    ]);
  });

  it("required: empty or blank is missing, anything else is there", () => {
    expect(found((c) => c.required("name", ""))).toEqual([{ field: "name", description: "is required" }]);
    expect(found((c) => c.required("name", " \t\n"))).toEqual([{ field: "name", description: "is required" }]);
    expect(found((c) => c.required("name", " x "))).toEqual([]);
  });

  it("length: the limits are inclusive; the message says the range, or only the maximum when there is no minimum", () => {
    const { slugMin: min, slugMax: max } = LIMITS;
    expect(found((c) => c.length("slug", "a".repeat(min), min, max))).toEqual([]);
    expect(found((c) => c.length("slug", "a".repeat(max), min, max))).toEqual([]);
    expect(found((c) => c.length("slug", "a".repeat(min - 1), min, max))).toEqual([{ field: "slug", description: `must be ${min} to ${max} characters` }]);
    expect(found((c) => c.length("slug", "a".repeat(max + 1), min, max))).toEqual([{ field: "slug", description: `must be ${min} to ${max} characters` }]);
    expect(found((c) => c.length("name", "a".repeat(LIMITS.name), 0, LIMITS.name))).toEqual([]);
    expect(found((c) => c.length("name", "a".repeat(LIMITS.name + 1), 0, LIMITS.name))).toEqual([
      { field: "name", description: "must be at most 255 characters" },
    ]);
    expect(found((c) => c.length("name", "", 0, LIMITS.name))).toEqual([]);
    // A minimum of 1 is still a range.
    expect(found((c) => c.length("name", "", 1, 5))).toEqual([{ field: "name", description: "must be 1 to 5 characters" }]);
    expect(found((c) => c.length("name", undefined, 1, 5))).toEqual([]); // unset is not checked
  });

  it("length counts characters, not UTF-16 units", () => {
    const emoji = "🎬".repeat(LIMITS.userName); // 2 UTF-16 units each
    expect(found((c) => c.length("name", emoji, 1, LIMITS.userName))).toEqual([]);
    expect(found((c) => c.length("name", `${emoji}🎬`, 1, LIMITS.userName))).toHaveLength(1);
  });

  it("id: required unless told otherwise, and of the right prefix", () => {
    expect(found((c) => c.id("job_id", "", Prefix.job))).toEqual([{ field: "job_id", description: "is required" }]);
    expect(found((c) => c.id("job_id", "", Prefix.job, false))).toEqual([]);
    expect(found((c) => c.id("job_id", "job_abc123", Prefix.job))).toEqual([]);
    expect(found((c) => c.id("job_id", "job_abc123", Prefix.job, false))).toEqual([]);
    for (const bad of ["vid_abc123", "job_", "job_a-b", "abc"]) {
      expect(
        found((c) => c.id("job_id", bad, Prefix.job)),
        bad,
      ).toEqual([{ field: "job_id", description: "must be an id starting with job_" }]);
    }
  });

  it("httpsUrl: https only, a valid URL, at most LIMITS.url characters", () => {
    const at = (n: number) => `https://example.com/${"a".repeat(n - "https://example.com/".length)}`;
    expect(at(LIMITS.url)).toHaveLength(LIMITS.url);
    expect(found((c) => c.httpsUrl("url", at(LIMITS.url)))).toEqual([]);
    expect(found((c) => c.httpsUrl("url", at(LIMITS.url + 1)))).toEqual([{ field: "url", description: "must be at most 2048 characters" }]);
    expect(found((c) => c.httpsUrl("url", "http://example.com/"))).toEqual([{ field: "url", description: "must be an https:// URL" }]);
    expect(found((c) => c.httpsUrl("url", "example.com"))).toEqual([{ field: "url", description: "must be a valid URL" }]);
    expect(found((c) => c.httpsUrl("url", ""))).toEqual([{ field: "url", description: "must be a valid URL" }]);
    // Too long is reported alone, even when the URL is not https either.
    expect(found((c) => c.httpsUrl("url", `ftp://${"a".repeat(LIMITS.url)}`))).toEqual([{ field: "url", description: "must be at most 2048 characters" }]);
  });

  it("email: one @, a dot in the domain, no spaces; unset is not checked", () => {
    for (const ok of ["a@b.co", "first.last+tag@sub.example.org"])
      expect(
        found((c) => c.email("email", ok)),
        ok,
      ).toEqual([]);
    for (const bad of ["", "a@b", "ab.co", "a@@b.co", "a b@c.de", "a@b.c d", "@b.co", "a@.", "a@b.co\n"]) {
      expect(
        found((c) => c.email("email", bad)),
        JSON.stringify(bad),
      ).toEqual([{ field: "email", description: "must be an email address" }]);
    }
    expect(found((c) => c.email("email", undefined))).toEqual([]);
  });

  it("done throws invalid_argument listing every violation, and nothing when there is none", () => {
    new Check().done();
    const check = new Check().required("name", "").add("outputs[0].type", "is required");
    let error: unknown;
    try {
      check.done();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConnectError);
    expect(error).toMatchObject({ code: Code.InvalidArgument, rawMessage: "name: is required; outputs[0].type: is required" });
  });
});
