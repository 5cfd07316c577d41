// Real storage peers on loopback for tests: MinIO (S3, and R2 through a custom endpoint) over TLS
// with a CA made at test time, fake-gcs-server (the GCS JSON API, over http) and a plain Node
// HTTPS server. Binaries come from `bash infra/peers.sh build` (scripts/test.sh runs it).
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const ROOT = path.resolve(import.meta.dirname, "..");
export const PEERS_BIN = path.join(process.env.MEDIA_INFRA_DIR ?? path.join(ROOT, ".infra"), "bin");

function binary(name: string): string {
  const file = path.join(PEERS_BIN, name);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`bash infra/peers.sh build\` (scripts/test.sh does)`);
  return file;
}

export async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ───────────────────────────── a test CA ─────────────────────────────

export interface TestCa {
  readonly dir: string;
  /** The CA certificate: what MEDIA_TLS_CA_FILE points at. */
  readonly caFile: string;
  /** A server certificate for localhost, 127.0.0.1 and ::1, signed by the CA. */
  readonly certFile: string;
  readonly keyFile: string;
  remove(): void;
}

/** A throwaway CA and server certificate, made with the openssl CLI. */
export function makeTestCa(): TestCa {
  const dir = mkdtempSync(path.join(tmpdir(), "media-test-ca-"));
  const f = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=media test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  );
  openssl("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost");
  const ext = f("server.ext");
  writeFileSync(ext, "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", ext);
  return { dir, caFile: f("ca.crt"), certFile: f("server.crt"), keyFile: f("server.key"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

// ───────────────────────────── processes ─────────────────────────────

const children = new Set<ChildProcess>();
// A test run that dies must not leave servers behind.
process.once("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

function startProcess(file: string, args: readonly string[], env: Record<string, string> = {}): { child: ChildProcess; output: () => string } {
  const child = spawn(file, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  child.once("exit", () => children.delete(child));
  let out = "";
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-8192);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return { child, output: () => out };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

async function waitFor(what: string, ready: () => Promise<boolean>, started: { child: ChildProcess; output: () => string }, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (started.child.exitCode !== null) throw new Error(`${what} exited during start:\n${started.output()}`);
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${timeoutMs / 1000} s:\n${started.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function httpsStatus(url: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on("error", reject);
  });
}

// ───────────────────────────── MinIO ─────────────────────────────

export interface AccessKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface MinioPeer {
  /** https://127.0.0.1:<port>, trusted through the test CA. */
  readonly endpoint: string;
  /** Full access (the root user). */
  readonly admin: AccessKey;
  /** A user with MinIO's built-in readonly policy: reads pass, writes are denied. */
  readonly readOnly: AccessKey;
  /** Runs MinIO's client against this server as admin, alias `peer` (e.g. "rb", "--force", "peer/b"); resolves to its output. */
  mc(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** MinIO on a free loopback port with a fresh data folder, its buckets and a read-only user. */
export async function startMinio(ca: TestCa, buckets: readonly string[]): Promise<MinioPeer> {
  const port = await freeLoopbackPort();
  const dir = mkdtempSync(path.join(tmpdir(), "media-minio-"));
  mkdirSync(path.join(dir, "certs"));
  copyFileSync(ca.certFile, path.join(dir, "certs/public.crt"));
  copyFileSync(ca.keyFile, path.join(dir, "certs/private.key"));
  const admin = { accessKeyId: "media-admin", secretAccessKey: "media-admin-secret-0123" };
  const readOnly = { accessKeyId: "media-reader", secretAccessKey: "media-reader-secret-0123" };
  const started = startProcess(
    binary("minio"),
    ["server", "--quiet", "--certs-dir", path.join(dir, "certs"), "--address", `127.0.0.1:${port}`, path.join(dir, "data")],
    {
      MINIO_ROOT_USER: admin.accessKeyId,
      MINIO_ROOT_PASSWORD: admin.secretAccessKey,
      MINIO_BROWSER: "off",
      MINIO_UPDATE: "off",
    },
  );
  const endpoint = `https://127.0.0.1:${port}`;
  const caPem = readFileSync(ca.caFile, "utf8");
  // mc trusts the test CA from its config folder; the alias comes from MC_HOST_<name>.
  const mcDir = path.join(dir, "mc");
  mkdirSync(path.join(mcDir, "certs/CAs"), { recursive: true });
  copyFileSync(ca.caFile, path.join(mcDir, "certs/CAs/ca.crt"));
  const mc = async (...args: string[]) =>
    (
      await promisify(execFile)(binary("mc"), ["--config-dir", mcDir, "--quiet", "--no-color", ...args], {
        env: { ...process.env, MC_HOST_peer: `https://${admin.accessKeyId}:${admin.secretAccessKey}@127.0.0.1:${port}` },
      })
    ).stdout;
  try {
    await waitFor("minio", async () => (await httpsStatus(`${endpoint}/minio/health/ready`, caPem)) === 200, started);
    if (buckets.length > 0) await mc("mb", ...buckets.map((b) => `peer/${b}`));
    await mc("admin", "user", "add", "peer", readOnly.accessKeyId, readOnly.secretAccessKey);
    await mc("admin", "policy", "attach", "peer", "readonly", "--user", readOnly.accessKeyId);
  } catch (e) {
    await stopProcess(started.child);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    endpoint,
    admin,
    readOnly,
    mc,
    stop: async () => {
      await stopProcess(started.child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ───────────────────────────── fake-gcs-server ─────────────────────────────

export interface GcsPeer {
  /** http://127.0.0.1:<port>: what MEDIA_GCS_API_ENDPOINT points at. */
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * fake-gcs-server with an in-memory backend and the given buckets. It checks no credentials, so
 * tests against it cover the key file's shape and the reads and writes, not Google's key check.
 */
export async function startFakeGcs(buckets: readonly string[]): Promise<GcsPeer> {
  const port = await freeLoopbackPort();
  const endpoint = `http://127.0.0.1:${port}`;
  const started = startProcess(binary("fake-gcs-server"), [
    "-scheme",
    "http",
    "-host",
    "127.0.0.1",
    "-port",
    String(port),
    "-backend",
    "memory",
    "-public-host",
    `127.0.0.1:${port}`,
    "-external-url",
    endpoint,
    "-log-level",
    "error",
  ]);
  try {
    await waitFor("fake-gcs-server", async () => (await fetch(`${endpoint}/storage/v1/b`)).ok, started);
    for (const name of buckets) {
      const res = await fetch(`${endpoint}/storage/v1/b`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) });
      if (!res.ok) throw new Error(`fake-gcs-server: creating bucket ${name} answered ${res.status}: ${await res.text()}`);
    }
  } catch (e) {
    await stopProcess(started.child);
    throw e;
  }
  return { endpoint, stop: () => stopProcess(started.child) };
}

/** A service account key file of the shape Google issues, with a fresh RSA key. */
export function serviceAccountJson(email = "media-test@media-test.iam.gserviceaccount.com"): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return JSON.stringify({
    type: "service_account",
    project_id: "media-test",
    private_key_id: "0123456789abcdef",
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    client_email: email,
    client_id: "1",
    token_uri: "https://oauth2.googleapis.com/token",
  });
}

// ───────────────────────────── an HTTPS server ─────────────────────────────

export interface HttpsPeer {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  stop(): Promise<void>;
}

export async function startHttpsPeer(ca: TestCa, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<HttpsPeer> {
  const server = https.createServer({ key: readFileSync(ca.keyFile), cert: readFileSync(ca.certFile) }, handler);
  // Idle connections kept 65 s, as our own host and nginx keep them, not Node's 5 s: a node's
  // agent that reuses one just as the peer closes it gets ECONNRESET, which fails a job's input
  // fetch (input_unreachable). The chaos suite's pauses hit it (the encoder does not retry that yet).
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An HTTPS server that answers every GET with one file: a job input on loopback. */
export function serveFile(ca: TestCa, file: string): Promise<HttpsPeer> {
  return startHttpsPeer(ca, (_req, res) => {
    const data = readFileSync(file);
    res.writeHead(200, { "content-type": "video/mp4", "content-length": data.length }).end(data);
  });
}
