// The one wire error type: ConnectError with media.v1.ErrorDetails attached, built only here.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailsSchema } from "./gen/media/v1/common_pb.js";

export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

const detailCode: Partial<Record<Code, string>> = {
  [Code.InvalidArgument]: "validation_error",
  [Code.Unauthenticated]: "unauthenticated",
  [Code.PermissionDenied]: "permission_denied",
  [Code.NotFound]: "not_found",
  [Code.AlreadyExists]: "already_exists",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.ResourceExhausted]: "rate_limited",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "unavailable",
  [Code.Unimplemented]: "unimplemented",
  [Code.Aborted]: "conflict",
  [Code.DeadlineExceeded]: "deadline_exceeded",
  [Code.Canceled]: "canceled",
};

export function apiError(code: Code, message: string, violations: readonly FieldViolation[] = []): ConnectError {
  const details = create(ErrorDetailsSchema, {
    code: detailCode[code] ?? "error",
    message,
    fieldViolations: violations.map((v) => ({ field: v.field, description: v.description })),
  });
  // Raw {type, value} so the body carries exactly type and base64 value, no "debug" echo.
  return new ConnectError(message, code, undefined, [{ type: ErrorDetailsSchema.typeName, value: toBinary(ErrorDetailsSchema, details) } as never]);
}

export const invalid = (violations: readonly FieldViolation[], message?: string): ConnectError =>
  apiError(Code.InvalidArgument, message ?? violations.map((v) => `${v.field}: ${v.description}`).join("; "), violations);
export const invalidField = (field: string, description: string): ConnectError => invalid([{ field, description }]);
export const notFound = (what: string, id: string): ConnectError => apiError(Code.NotFound, `${what} ${id} not found`);
export const permissionDenied = (message: string): ConnectError => apiError(Code.PermissionDenied, message);
export const unauthenticated = (message: string): ConnectError => apiError(Code.Unauthenticated, message);
export const alreadyExists = (message: string, field?: string): ConnectError =>
  apiError(Code.AlreadyExists, message, field ? [{ field, description: message }] : []);
export const failedPrecondition = (message: string): ConnectError => apiError(Code.FailedPrecondition, message);
export const unimplemented = (capability: string): ConnectError => apiError(Code.Unimplemented, `${capability} is not available in this build yet`);

/** Internal, named errors: whether a retry can help is part of the name. */
/** The store could not be reached or did not answer in time (a database restart): a retry may succeed. */
export class StoreUnavailable extends Error {
  readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailable";
  }
}

/** A fenced commit whose shard has a newer owner: its events may be kept or dropped, nothing after them was written. */
export class Fenced extends Error {
  readonly retryable = true;
  constructor(
    readonly scope: string,
    readonly shard: number,
    readonly epoch: number,
    readonly current: number,
  ) {
    super(`shard ${shard} of ${scope} is owned at epoch ${current}; this writer holds epoch ${epoch}`);
    this.name = "Fenced";
  }
}

export class VersionConflict extends Error {
  readonly retryable = true;
  constructor(
    readonly key: string,
    expected: number,
    actual: number,
  ) {
    super(`write to ${key} expected version ${expected}, found ${actual}`);
    this.name = "VersionConflict";
  }
}
