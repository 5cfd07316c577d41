// Nothing acknowledged is lost: a stream of creates against the real process, kill -9 in the
// middle of it, a restart on the same folder, and every acknowledged write read back.
import { afterAll, describe, expect, it } from "vitest";
import { call, freePort, readBootstrap, spawnServer, tempDataDir, type ChildServer, TARGET } from "../harness.js";

describe.skipIf(TARGET === "cluster")("durability of the embedded store", () => {
  const dataDir = tempDataDir();
  let server: ChildServer | undefined;
  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  it("keeps every acknowledged create and revoke across kill -9 and restart", async () => {
    server = await spawnServer(dataDir, freePort());
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };

    const revoked = await call(server.base, "APIKeyService/Create", { name: "to-revoke" }, auth);
    await call(server.base, "APIKeyService/Revoke", { id: revoked.body.api_key.id, reason: "rotation" }, auth);

    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const r = await call(server!.base, "APIKeyService/Create", { name: `w${w}-${i}` }, auth);
          if (r.status === 200) acknowledged.push(r.body.api_key.id);
        } catch {
          return; // the connection died with the process: not acknowledged
        }
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 5));
    const exit = server.stop("SIGKILL");
    stop = true;
    await exit;
    await Promise.all(writers);
    expect(acknowledged.length).toBeGreaterThanOrEqual(200);

    server = await spawnServer(dataDir, freePort());
    const missing: string[] = [];
    for (const id of acknowledged) {
      const r = await call(server.base, "APIKeyService/Get", { id }, auth);
      if (r.status !== 200) missing.push(id);
    }
    expect(missing).toEqual([]);
    const after = await call(server.base, "APIKeyService/Get", { id: revoked.body.api_key.id }, auth);
    expect(after.body.api_key.is_revoked).toBe(true);

    // The journal still fences: revoking again is refused, not duplicated.
    const again = await call(server.base, "APIKeyService/Revoke", { id: revoked.body.api_key.id }, auth);
    expect(again.body.code).toBe("failed_precondition");
    // And the log keeps accepting writes after recovery.
    expect((await call(server.base, "APIKeyService/Create", { name: "after-crash" }, auth)).status).toBe(200);
  });
});
