// The end of a stream that went well is told from one with an error without Connect's parser.
import { describe, expect, it } from "vitest";
import { endsWithoutError } from "./wire-errors.js";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("endsWithoutError", () => {
  it("is true for an end-of-stream object without an error, with or without metadata", () => {
    expect(endsWithoutError(bytes("{}"))).toBe(true);
    expect(endsWithoutError(bytes('{"metadata":{"x-a":["1"]}}'))).toBe(true);
  });

  it("is false for an error, and for what is not an end-of-stream object (Connect's parser decides those)", () => {
    expect(endsWithoutError(bytes('{"error":{"code":"internal","message":"x"}}'))).toBe(false);
    expect(endsWithoutError(bytes('{"metadata":{},"error":null}'))).toBe(false);
    expect(endsWithoutError(bytes("[]"))).toBe(false);
    expect(endsWithoutError(bytes("null"))).toBe(false);
    expect(endsWithoutError(bytes("not json"))).toBe(false);
  });
});
