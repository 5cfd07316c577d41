// The Helm chart (deploy/helm/media), offline: `helm lint` and `helm template` with the default
// values and with ci/full-values.yaml (every option on), each rendered object decoded strictly by
// deploy/helm/validate (the Kubernetes, KEDA and prometheus-operator API types); broken values that
// must fail; and the chart held to the code: every variable it sets is one loadConfig reads and
// accepts, its probes' ports are the ports that configuration listens on, its probe paths answer on
// a running server, its scaler's queries name metrics that server exports, and its migrate Job runs
// a command the CLI has while no role creates the schema beside it.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { freePort, ROOT, spawnServer, tempDataDir, type ChildServer } from "../harness.js";

const chart = path.join(ROOT, "deploy/helm/media");
const fullValues = path.join(chart, "ci/full-values.yaml");
// A Kubernetes version inside the chart's kubeVersion: helm built by `go install` assumes 1.20.
const kube = ["--kube-version", "1.33.0"];

let helm = "";
let validator = "";
const scratch = mkdtempSync(path.join(tmpdir(), "media-helm-"));

beforeAll(async () => {
  // Builds helm and the validator when missing (minutes, cold; scripts/setup.sh does it first),
  // otherwise returns at once. Asynchronously: a worker blocked that long misses vitest's RPC timeout.
  const { stdout, stderr } = await promisify(execFile)("bash", [path.join(ROOT, "deploy/helm/setup.sh")], { encoding: "utf8" });
  if (stderr) process.stderr.write(stderr);
  [helm = "", validator = ""] = stdout.trim().split("\n");
}, 1_800_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: readonly string[], input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

const show = (r: Run) => `exit ${r.code}\n${r.stdout}\n${r.stderr}`;

/** `helm template` of the chart with these values files; the manifest, or the failure. */
async function template(...valuesFiles: string[]): Promise<Run> {
  return run(helm, ["template", "media", chart, "--namespace", "media", ...kube, ...valuesFiles.flatMap((f) => ["-f", f])]);
}

function valuesFile(name: string, yaml: string): string {
  const file = path.join(scratch, name);
  writeFileSync(file, yaml);
  return file;
}

// The shapes the tests read from the decoded objects (the validator has checked them in full).
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
}
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  args?: string[];
  securityContext?: unknown;
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
}
interface K8sObject {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: {
    template?: { spec: { containers: Container[]; restartPolicy?: string; securityContext?: unknown } };
    triggers?: { metadata: Record<string, string> }[];
    backoffLimit?: number;
    ttlSecondsAfterFinished?: number;
  };
}

/** The validator's strict decoding of a manifest, as JSON; it fails the test on any error. */
async function decode(manifest: string): Promise<K8sObject[]> {
  const r = await run(validator, ["-json"], manifest);
  expect(r.code, show(r)).toBe(0);
  return JSON.parse(r.stdout) as K8sObject[];
}

const byKind = (objects: readonly K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);

/** The environment a container starts with: its ConfigMaps' keys, then its own variables, Secrets' values resolved. */
function containerEnv(objects: readonly K8sObject[], container: Container): Record<string, string> {
  const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.secretRef) throw new Error(`${container.name}: envFrom of a Secret would set names the chart cannot list`);
    const map = from.configMapRef && find("ConfigMap", from.configMapRef.name);
    if (!map && !from.configMapRef?.optional) throw new Error(`${container.name}: ConfigMap ${from.configMapRef?.name} is not rendered`);
    Object.assign(env, map?.data ?? {});
  }
  for (const v of container.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value;
    const secret = v.valueFrom?.secretKeyRef;
    if (secret) {
      const data = find("Secret", secret.name)?.data?.[secret.key];
      if (data === undefined) throw new Error(`${container.name}: ${v.name} reads ${secret.name}/${secret.key}, which is not rendered`);
      env[v.name] = Buffer.from(data, "base64").toString("utf8");
    }
    const entry = v.valueFrom?.configMapKeyRef;
    if (entry) env[v.name] = find("ConfigMap", entry.name)?.data?.[entry.key] ?? "";
  }
  return env;
}

/** The names loadConfig reads while it loads this environment, which it must also accept. */
function configReads(env: Record<string, string>): Set<string> {
  const reads = new Set<string>();
  const watched = new Proxy(env, {
    get(target, name) {
      if (typeof name === "string") reads.add(name);
      return target[name as string];
    },
  });
  loadConfig(watched);
  return reads;
}

const ROLES = ["gateway", "actor-host", "encoder-node"] as const;

function roleContainer(objects: readonly K8sObject[], role: string): Container {
  const deployment = byKind(objects, "Deployment").find((d) => d.spec?.template?.spec.containers[0]?.args?.includes(role));
  const container = deployment?.spec?.template?.spec.containers[0];
  if (!container) throw new Error(`no Deployment runs the ${role} role`);
  return container;
}

const portNumber = (c: Container, port: string | number) => (typeof port === "number" ? port : c.ports?.find((p) => p.name === port)?.containerPort);

describe("deploy: the Helm chart", () => {
  const renders: Record<"default" | "full", K8sObject[]> = { default: [], full: [] };

  it("lints with the default values and with every option on", async () => {
    for (const extra of [[], ["-f", fullValues]]) {
      const r = await run(helm, ["lint", "--strict", chart, ...kube, ...extra]);
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout).toContain("0 chart(s) failed");
    }
  }, 60_000);

  it("renders objects that decode strictly against the API types", async () => {
    const plain = await template();
    expect(plain.code, show(plain)).toBe(0);
    renders.default = await decode(plain.stdout);
    expect(renders.default.map((o) => o.kind).sort()).toEqual(
      [
        "ConfigMap",
        "Deployment",
        "Deployment",
        "Deployment",
        "Job",
        "PodDisruptionBudget",
        "PodDisruptionBudget",
        "PodDisruptionBudget",
        "Secret",
        "Service",
        "Service",
        "ServiceAccount",
      ].sort(),
    );
    const full = await template(fullValues);
    expect(full.code, show(full)).toBe(0);
    renders.full = await decode(full.stdout);
    for (const kind of ["ScaledObject", "ServiceMonitor", "Ingress", "NetworkPolicy", "Job"]) expect(byKind(renders.full, kind), kind).toHaveLength(1);
    // Without autoscaling the Deployment names its replicas; with it, KEDA alone does.
    const encoders = (objects: K8sObject[]) =>
      byKind(objects, "Deployment").find((d) => d.metadata.name.endsWith("encoder-node")) as unknown as { spec: { replicas?: number } };
    expect(encoders(renders.default).spec.replicas).toBe(1);
    expect(encoders(renders.full).spec.replicas).toBeUndefined();
  }, 60_000);

  it("keeps credentials out of the ConfigMap", () => {
    for (const objects of [renders.default, renders.full]) {
      const [map] = byKind(objects, "ConfigMap");
      for (const name of ["MEDIA_SERVER_SECRET", "MEDIA_CASSANDRA_PASSWORD", "MEDIA_MANAGED_S3_SECRET_ACCESS_KEY", "MEDIA_OIDC_CLIENT_SECRET"]) {
        expect(Object.keys(map?.data ?? {})).not.toContain(name);
      }
      const secret = roleContainer(objects, "gateway").env?.find((v) => v.name === "MEDIA_SERVER_SECRET");
      expect(secret?.valueFrom?.secretKeyRef).toBeDefined();
    }
    expect(JSON.stringify(byKind(renders.full, "ConfigMap"))).not.toContain("secret-access-key-value");
  });

  it("fails on a misspelt field or a wrong type the values schema cannot see", async () => {
    // extraObjects and the securityContexts are free-form in values.schema.json: only the validator reads them.
    const misspelt = valuesFile(
      "misspelt.yaml",
      `extraObjects:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: deny-all }
    spec:
      podSelecter: {}
`,
    );
    const wrongType = valuesFile("wrong-type.yaml", "podSecurityContext:\n  runAsUser: ten\n");
    const unwired = valuesFile(
      "unwired.yaml",
      `extraObjects:
  - apiVersion: v1
    kind: Service
    metadata: { name: media-admin }
    spec:
      selector: { app.kubernetes.io/component: admin }
      ports: [{ name: http, port: 80, targetPort: http }]
`,
    );
    const cases: [string, RegExp][] = [
      [misspelt, /unknown field "spec\.podSelecter"/],
      [wrongType, /cannot unmarshal string into Go struct field PodSecurityContext\.spec\.template\.spec\.securityContext\.runAsUser of type int64/],
      [unwired, /Service\/media-admin: selector .* matches no workload's pods/],
    ];
    for (const [file, message] of cases) {
      const rendered = await template(file);
      expect(rendered.code, show(rendered)).toBe(0);
      const r = await run(validator, [], rendered.stdout);
      expect(r.code, show(r)).toBe(1);
      expect(r.stdout).toMatch(message);
    }
    // The values the schema does see fail at `helm template`, naming the key.
    const typo = await template(valuesFile("typo.yaml", "gateway:\n  replica: 3\n"));
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/at '\/gateway': additional properties 'replica' not allowed/);
    const short = await template(valuesFile("short.yaml", "secret:\n  serverSecret: too-short\n"));
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/\/secret\/serverSecret/);
    // And a gateway killed before its drain is over, by the chart itself.
    const grace = await template(valuesFile("grace.yaml", "gateway:\n  terminationGracePeriodSeconds: 20\n"));
    expect(grace.code).toBe(1);
    expect(grace.stderr).toMatch(/gateway\.terminationGracePeriodSeconds \(20\) must cover/);
  }, 120_000);

  it("sets only variables loadConfig reads, with values it accepts", () => {
    for (const [name, objects] of Object.entries(renders)) {
      for (const role of ROLES) {
        const env = containerEnv(objects, roleContainer(objects, role));
        const reads = configReads(env);
        const unread = Object.keys(env).filter((n) => !reads.has(n));
        expect(unread, `${name} values, ${role}: set by the chart, never read by src/config.ts`).toEqual([]);
        expect(env.MEDIA_MODE).toBe("cluster");
      }
    }
  });

  it("applies the schema by a Job running the CLI's migrate command, with no role creating it too", async () => {
    const commands = new Set<string>();
    for (const [name, objects] of Object.entries(renders)) {
      const [job, ...more] = byKind(objects, "Job");
      expect(more, `${name} values: one Job`).toEqual([]);
      // Named by the release's revision (1 under helm template): each upgrade runs a Job of its own.
      expect(job?.metadata.name).toMatch(/^media-migrate-1$/);
      expect(job?.spec?.backoffLimit).toBeGreaterThan(0);
      expect(job?.spec?.ttlSecondsAfterFinished).toBeGreaterThan(0);
      const pod = job!.spec!.template!.spec;
      expect(pod.restartPolicy).toBe("OnFailure");
      const [container] = pod.containers;
      expect(container?.args).toEqual(["migrate"]);
      commands.add(JSON.stringify(container?.args));
      expect([container?.livenessProbe, container?.readinessProbe, container?.startupProbe]).toEqual([undefined, undefined, undefined]);
      const gateway = roleContainer(objects, "gateway");
      expect(container?.securityContext).toEqual(gateway.securityContext);
      const [gatewayPod] = byKind(objects, "Deployment")
        .map((d) => d.spec!.template!.spec)
        .filter((p) => p.containers[0] === gateway);
      expect(pod.securityContext).toEqual(gatewayPod?.securityContext);
      // The roles' settings and credentials (less what the Job's extraEnv overrides), which loadConfig takes.
      const env = containerEnv(objects, container!);
      const roleEnv = containerEnv(objects, gateway);
      const overridden = new Set((container?.env ?? []).filter((v) => v.value !== undefined).map((v) => v.name));
      const shared = [...Object.keys(byKind(objects, "ConfigMap")[0]?.data ?? {}), ...(gateway.env ?? []).filter((v) => v.valueFrom).map((v) => v.name)];
      expect(shared).toContain("MEDIA_SERVER_SECRET");
      for (const variable of shared.filter((v) => !overridden.has(v))) expect(env[variable], `${name} values: ${variable}`).toBe(roleEnv[variable]);
      const reads = configReads(env);
      expect(Object.keys(env).filter((n) => !reads.has(n))).toEqual([]);
      for (const role of ROLES) {
        const config = loadConfig(containerEnv(objects, roleContainer(objects, role)));
        expect(config.cluster.cassandraCreateSchema, `${name} values, ${role}: creates the schema beside the Job`).toBe(false);
      }
    }
    // The Job's command is one the CLI has: `media <command> --help` prints its synopsis, an unknown one fails.
    expect(commands.size).toBe(1);
    const args = JSON.parse([...commands][0]!) as string[];
    const cli = await run(process.execPath, [path.join(ROOT, "bin/media.js"), ...args, "--help"]);
    expect(cli.code, show(cli)).toBe(0);
    expect(cli.stdout).toMatch(/^usage: media migrate\n/);
  }, 60_000);

  it("leaves the schema to the roles only when the Job is off, and refuses both at once", async () => {
    const both = await template(valuesFile("both.yaml", "cassandra:\n  createSchema: true\n"));
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/cassandra\.createSchema and migrate\.enabled are both true/);
    const roles = await template(valuesFile("roles.yaml", "cassandra:\n  createSchema: true\nmigrate:\n  enabled: false\n"));
    expect(roles.code, show(roles)).toBe(0);
    const objects = await decode(roles.stdout);
    expect(byKind(objects, "Job")).toEqual([]);
    for (const role of ROLES) expect(loadConfig(containerEnv(objects, roleContainer(objects, role))).cluster.cassandraCreateSchema, role).toBe(true);
  }, 60_000);

  it("probes the ports the configuration listens on", () => {
    for (const objects of [renders.default, renders.full]) {
      for (const role of ROLES) {
        const container = roleContainer(objects, role);
        const config = loadConfig(containerEnv(objects, container));
        // Gateways answer their probes on the HTTP port; the other roles on the metrics port.
        const expected = role === "gateway" ? config.httpPort : config.metricsPort;
        expect(expected, role).toBeGreaterThan(0);
        for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
          expect(probe, role).toBeDefined();
          expect(portNumber(container, probe!.httpGet.port), `${role} probe port`).toBe(expected);
        }
        expect(portNumber(container, "metrics")).toBe(config.metricsPort);
      }
    }
  });

  describe("against a running server", () => {
    let server: ChildServer | undefined;
    let metricsPort = 0;

    beforeAll(async () => {
      metricsPort = freePort();
      server = await spawnServer(tempDataDir(), freePort(), { MEDIA_METRICS_PORT: String(metricsPort) });
    }, 120_000);

    afterAll(async () => {
      await server?.stop();
      if (server) rmSync(server.dataDir, { recursive: true, force: true });
    });

    it("answers the chart's probe paths on the gateway's port and on the metrics port", async () => {
      for (const role of ROLES) {
        const container = roleContainer(renders.default, role);
        const base = role === "gateway" ? server!.base : `http://127.0.0.1:${metricsPort}`;
        const live = await fetch(`${base}${container.livenessProbe!.httpGet.path}`);
        expect(live.status, `${role}: GET ${container.livenessProbe!.httpGet.path} (404: the code serves no such probe)`).toBe(200);
        expect(container.startupProbe!.httpGet.path).toBe(container.livenessProbe!.httpGet.path);
        // Ready or not (503), but served: a 404 would keep every pod out of its Service for good.
        const ready = await fetch(`${base}${container.readinessProbe!.httpGet.path}`);
        expect([200, 503], `${role}: GET ${container.readinessProbe!.httpGet.path} (404: the code serves no such probe)`).toContain(ready.status);
      }
    });

    it("scales on metrics the processes export", async () => {
      const [scaler] = byKind(renders.full, "ScaledObject");
      const names = new Set((scaler?.spec?.triggers ?? []).flatMap((t) => t.metadata.query?.match(/\bmedia_[a-z_]+/g) ?? []));
      expect(names.size).toBeGreaterThan(0);
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      for (const name of names) expect(text, name).toContain(`# TYPE ${name} gauge`);
    });
  });
});
