import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestCa, startHttpsPeer, type HttpsPeer, type TestCa } from "../test/peers.js";
import { forbiddenRange, NetGuard, NetGuardError, parseAllowEntry } from "./net-guard.js";

const guard = (allow: string[] = [], tlsCaFile?: string) => new NetGuard({ net: { allow, tlsCaFile } });

async function refusal(work: Promise<unknown>): Promise<NetGuardError> {
  const e = await work.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(NetGuardError);
  return e as NetGuardError;
}

describe("address ranges", () => {
  it.each([
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.169.254", "cloud metadata"],
    ["169.254.10.10", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.254", "carrier-grade NAT"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.251", "multicast"],
    ["255.255.255.255", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["fd00:ec2::254", "cloud metadata"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"], // IPv4-mapped, dotted
    ["::ffff:a9fe:a9fe", "cloud metadata"], // IPv4-mapped 169.254.169.254, hex
    ["64:ff9b::a00:1", "private"], // NAT64 of 10.0.0.1
    ["2002:c0a8:101::1", "private"], // 6to4 of 192.168.1.1
  ])("%s is %s", (address, range) => {
    expect(forbiddenRange(address)).toBe(range);
  });

  it.each(["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "169.255.0.1", "2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8"])("%s is public", (address) => {
    expect(forbiddenRange(address)).toBeUndefined();
  });

  it("parses allowlist entries and refuses what is neither CIDR nor host name", () => {
    expect(parseAllowEntry("127.0.0.1/32")?.kind).toBe("cidr");
    expect(parseAllowEntry("::1/128")?.kind).toBe("cidr");
    expect(parseAllowEntry("10.0.0.5")?.kind).toBe("cidr");
    expect(parseAllowEntry("minio.internal")).toEqual({ kind: "host", host: "minio.internal" });
    for (const bad of ["10.0.0.0/33", "::1/129", "1.2.3.4/x", "bad host", "a/b/c", "-x.example"]) expect(parseAllowEntry(bad), bad).toBeUndefined();
    expect(() => guard(["not a cidr!"])).toThrow(/allowlist/);
  });
});

describe("check", () => {
  it("allows https to public addresses and refuses other schemes unless http is allowed", async () => {
    await guard().check("https://8.8.8.8/x");
    expect((await refusal(guard().check("http://8.8.8.8/"))).reason).toBe("scheme");
    await guard().check("http://8.8.8.8/", { allowHttp: true });
    expect((await refusal(guard().check("ftp://8.8.8.8/", { allowHttp: true }))).reason).toBe("scheme");
    expect((await refusal(guard().check("file:///etc/passwd"))).reason).toBe("scheme");
    expect((await refusal(guard().check("not a url"))).reason).toBe("invalid_url");
  });

  it("refuses loopback, private and metadata addresses, literal or resolved", async () => {
    for (const url of ["https://127.0.0.1/", "https://10.0.0.8/", "https://169.254.169.254/latest/meta-data/", "https://[::1]/", "https://[fd00:ec2::254]/", "https://[::ffff:127.0.0.1]/", "https://localhost/"]) {
      const e = await refusal(guard().check(url));
      expect(e.reason, url).toBe("forbidden_address");
    }
    expect((await refusal(guard().check("https://169.254.169.254/"))).message).toMatch(/cloud metadata/);
  });

  it("lets the operator allowlist through, and nothing more", async () => {
    const g = guard(["127.0.0.1/32", "::1/128", "10.1.0.0/16"]);
    await g.check("https://127.0.0.1:9000/");
    await g.check("https://[::1]/");
    await g.check("https://[::ffff:127.0.0.1]/"); // mapped form of an allowed address
    await g.check("https://10.1.2.3/");
    expect((await refusal(g.check("https://10.2.0.1/"))).reason).toBe("forbidden_address");
    expect((await refusal(g.check("https://169.254.169.254/"))).reason).toBe("forbidden_address");
    // A name is allowed as such, whatever it resolves to.
    await guard(["localhost"]).check("https://localhost/");
    expect((await refusal(guard(["localhost"]).check("https://127.0.0.1/"))).reason).toBe("forbidden_address");
  });

  it("reports names that do not resolve", async () => {
    expect((await refusal(guard().check("https://no-such-host.invalid/"))).reason).toBe("unresolvable");
  });
});

describe("connections", () => {
  let plain: http.Server;
  let plainUrl: string;
  let ca: TestCa;
  let secure: HttpsPeer;
  let hits: { path: string; authorization: string | undefined }[] = [];

  beforeAll(async () => {
    plain = http.createServer((req, res) => {
      hits.push({ path: req.url ?? "", authorization: req.headers.authorization });
      const to = new URL(req.url ?? "/", "http://x").searchParams.get("to");
      if (to) res.writeHead(302, { location: to }).end();
      else res.writeHead(200, { "content-type": "text/plain" }).end("plain ok");
    });
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    ca = makeTestCa();
    secure = await startHttpsPeer(ca, (req, res) => {
      const to = new URL(req.url ?? "/", "https://x").searchParams.get("to");
      if (to) res.writeHead(302, { location: to }).end();
      else res.end("secure ok");
    });
  }, 30_000);

  afterAll(async () => {
    await new Promise((r) => plain?.close(r));
    await secure?.stop();
    ca?.remove();
  });

  const text = async (res: { body: NodeJS.ReadableStream }) => {
    let s = "";
    for await (const chunk of res.body) s += String(chunk);
    return s;
  };

  it("refuses at connect time: the agents judge IP literals and look names up through the guard", async () => {
    const g = guard();
    const viaAgent = (url: string) =>
      new Promise((resolve, reject) => http.get(url, { agent: g.agent("http:") }, resolve).on("error", reject));
    expect((await refusal(viaAgent(`${plainUrl}/`))).reason).toBe("forbidden_address");
    expect((await refusal(viaAgent(plainUrl.replace("127.0.0.1", "localhost")))).reason).toBe("forbidden_address");
    expect(hits).toEqual([]);
    g.destroy();
  });

  it("fetches through the allowlist and re-checks every redirect", async () => {
    const g = guard(["127.0.0.1/32"]);
    const ok = await g.request(`${plainUrl}/`, { allowHttp: true });
    expect(ok.status).toBe(200);
    expect(await text(ok)).toBe("plain ok");
    // Allowed first hop, redirect to the metadata address and to ::1 (not allowlisted).
    for (const to of ["http://169.254.169.254/latest/meta-data/", "http://[::1]:9/", "http://localhost.localdomain.invalid/"]) {
      const e = await refusal(g.request(`${plainUrl}/?to=${encodeURIComponent(to)}`, { allowHttp: true }));
      expect(["forbidden_address", "unresolvable"], to).toContain(e.reason);
    }
    // A redirect to a plain-http URL is refused when only https is allowed.
    const g2 = guard(["127.0.0.1/32"], ca.caFile);
    expect((await refusal(g2.request(`${secure.url}/?to=${encodeURIComponent(`${plainUrl}/`)}`))).reason).toBe("scheme");
    g.destroy();
    g2.destroy();
  });

  it("stops after maxRedirects and returns the 3xx when redirects are off", async () => {
    const g = guard(["127.0.0.1/32"]);
    const loop = `${plainUrl}/?to=${encodeURIComponent(`${plainUrl}/?to=${encodeURIComponent(`${plainUrl}/?to=x`)}`)}`;
    expect((await refusal(g.request(loop, { allowHttp: true, maxRedirects: 1 }))).reason).toBe("too_many_redirects");
    const raw = await g.request(`${plainUrl}/?to=/elsewhere`, { allowHttp: true, maxRedirects: 0 });
    raw.body.resume();
    expect(raw.status).toBe(302);
    g.destroy();
  });

  it("keeps headers on same-origin redirects and drops them when a redirect leaves the origin", async () => {
    const g = guard(["127.0.0.1/32", "localhost"]);
    hits = [];
    const same = await g.request(`${plainUrl}/?to=/final`, { allowHttp: true, headers: { authorization: "Bearer s3cret" } });
    same.body.resume();
    expect(hits.map((h) => h.authorization)).toEqual(["Bearer s3cret", "Bearer s3cret"]);
    hits = [];
    const other = plainUrl.replace("127.0.0.1", "localhost");
    const cross = await g.request(`${plainUrl}/?to=${encodeURIComponent(`${other}/final`)}`, { allowHttp: true, headers: { authorization: "Bearer s3cret" } });
    cross.body.resume();
    expect(hits.map((h) => h.authorization)).toEqual(["Bearer s3cret", undefined]);
    g.destroy();
  });

  it("trusts the extra CA in addition to the built-in roots, and only when configured", async () => {
    const withCa = guard(["127.0.0.1/32"], ca.caFile);
    const res = await withCa.request(`${secure.url}/`);
    expect(await text(res)).toBe("secure ok");
    const without = guard(["127.0.0.1/32"]);
    await expect(without.request(`${secure.url}/`)).rejects.toThrow(/certificate/i);
    withCa.destroy();
    without.destroy();
  });
});
