// Structured logging (pino) with secrets redacted at the source; inside a trace, each line names
// its trace_id and span_id (nothing is added with tracing off, or outside a trace).
import { pino, type Logger } from "pino";
import { logFields } from "./tracing.js";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "media" },
    mixin: logFields,
    redact: {
      paths: ["secret", "*.secret", "authorization", "*.authorization", "api_key_secret", "webhook_secret", "token"],
      censor: "[REDACTED]",
    },
  });
}
