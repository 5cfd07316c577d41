// Typed errors: every error the service answers is a ConnectError carrying a media.v1.ErrorDetails;
// MediaApiError lifts its machine-readable reason and field violations onto the error itself.
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailsSchema, type FieldViolation } from "./gen/media/v1/common_pb.js";

/** The service's error codes (Connect's, as the spec's table names them). */
export type ErrorCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

/** Code.InvalidArgument → "invalid_argument", as the JSON wire and the docs spell it. */
export function codeName(code: Code): ErrorCode {
  return Code[code]!.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`)) as ErrorCode;
}

export class MediaApiError extends ConnectError {
  // ConnectError's instanceof accepts any ConnectError (it works across copies of the package); this
  // one is only what this SDK made.
  static override [Symbol.hasInstance](v: unknown): boolean {
    return typeof v === "object" && v !== null && MediaApiError.prototype.isPrototypeOf(v);
  }
  // The name stays "ConnectError": connect-es recognises its errors by it, and would wrap this one
  // in an "unknown" error otherwise.
  /** The error code as the docs spell it: "invalid_argument", "not_found", ... */
  readonly errorCode: ErrorCode;
  /** ErrorDetails.code: a finer machine-readable reason (e.g. validation_error), empty when absent. */
  readonly reason: string;
  /** Which request fields were at fault (e.g. outputs[0].video[0].codec) and why. */
  readonly fieldViolations: readonly FieldViolation[];
  /** The RPC that failed, e.g. media.v1.JobService/Create. */
  readonly procedure: string;

  constructor(cause: ConnectError, procedure: string) {
    super(cause.rawMessage, cause.code, cause.metadata, undefined, cause);
    this.details = cause.details;
    const details = cause.findDetails(ErrorDetailsSchema)[0];
    this.errorCode = codeName(cause.code);
    this.reason = details?.code ?? "";
    this.fieldViolations = details?.fieldViolations ?? [];
    this.procedure = procedure;
    // ConnectError's message is "[code] message"; ours names the call and the fields too.
    const fields = this.fieldViolations
      .map((v) => `${v.field}: ${v.description}`)
      .filter((v) => !cause.rawMessage.includes(v))
      .join("; ");
    this.message = `${procedure}: [${this.errorCode}] ${cause.rawMessage}${fields ? ` (${fields})` : ""}`;
  }
}
