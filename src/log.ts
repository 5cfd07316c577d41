// Structured logging (pino) with secrets redacted at the source.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "media" },
    redact: {
      paths: ["secret", "*.secret", "authorization", "*.authorization", "api_key_secret", "webhook_secret", "token"],
      censor: "[REDACTED]",
    },
  });
}
