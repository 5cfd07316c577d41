// TLS client options of the operator's peers (Kafka, Cassandra) from their PEM files, and the
// reading of a failed handshake that lets a start name the setting at fault.
import { readFileSync } from "node:fs";
import type tls from "node:tls";
import type { TlsFiles } from "./config.js";

/** Options for tls.connect: the CA in place of the system's roots when given, the client certificate when given. */
export function tlsClientOptions(files: TlsFiles): tls.ConnectionOptions {
  return {
    rejectUnauthorized: true,
    ...(files.caFile ? { ca: [readFileSync(files.caFile, "utf8")] } : {}),
    ...(files.certFile && files.keyFile ? { cert: readFileSync(files.certFile, "utf8"), key: readFileSync(files.keyFile, "utf8") } : {}),
  };
}

/** Node's codes for a server certificate the client does not trust. */
const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_SIGNATURE_FAILURE",
]);

export type CertificateProblem = { readonly kind: "untrusted" | "hostname"; readonly message: string };

/**
 * What a failed connection says about the server's certificate, looking through the clients'
 * wrappers (the innermost error that says it); undefined when nothing.
 */
export function certificateProblem(e: unknown): CertificateProblem | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [e];
  let found: CertificateProblem | undefined;
  while (queue.length > 0) {
    const err = queue.shift();
    if (typeof err !== "object" || err === null || seen.has(err)) continue;
    seen.add(err);
    const { code, message, cause, originalError, innerErrors } = err as {
      code?: unknown;
      message?: unknown;
      cause?: unknown;
      originalError?: unknown;
      innerErrors?: unknown;
    };
    // The first line: the driver's wrappers append whole stack traces.
    const text = (typeof message === "string" ? message : "").split("\n")[0]!;
    if (code === "ERR_TLS_CERT_ALTNAME_INVALID" || /does not match certificate's altnames|Hostname\/IP does not match/i.test(text))
      found = { kind: "hostname", message: text };
    else if ((typeof code === "string" && UNTRUSTED.has(code)) || /self[- ]signed certificate|unable to (get|verify) .*(issuer|leaf|first) cert/i.test(text))
      found = { kind: "untrusted", message: text };
    queue.push(cause, originalError);
    if (innerErrors && typeof innerErrors === "object") queue.push(...Object.values(innerErrors));
  }
  return found;
}
