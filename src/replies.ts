// What an entity's actor answers a command, as plain data that crosses the bus unchanged: every
// role that sends commands (gateways, encoder nodes) reads it without knowing the actors.
import type { Code } from "@connectrpc/connect";
import type { FieldViolation } from "./errors.js";

/** A refusal decided by an entity; plain data so it crosses a bus unchanged. */
export interface Rejection {
  readonly code: Code;
  readonly message: string;
  readonly violations?: readonly FieldViolation[];
}

export type Reply<S> = { readonly ok: true; readonly state: S } | { readonly ok: false; readonly rejection: Rejection };
