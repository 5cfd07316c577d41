// Structured logging (pino) with secrets redacted at the source; with tracing on, a line written
// inside a trace names its trace_id and span_id. Off, loggers have no mixin at all: nothing per line.
import { pino, type Logger } from "pino";
import { logFields, tracingOn } from "./tracing.js";

export type { Logger };

/** `destination`: where lines go, stdout by default (a spec reads them). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: "media" },
    ...(tracingOn() ? { mixin: logFields } : {}),
    redact: {
      paths: ["secret", "*.secret", "authorization", "*.authorization", "api_key_secret", "webhook_secret", "token"],
      censor: "[REDACTED]",
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
