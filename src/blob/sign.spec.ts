import { createHash, createVerify, generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { presignS3Get, presignV4, signGcsGet } from "./sign.js";

describe("URL signing", () => {
  it("S3: reproduces AWS's published presigned-URL example (Signature V4, query parameters)", () => {
    // "Authenticating Requests: Using Query Parameters" in the Amazon S3 API reference.
    const url = presignV4(
      "https://examplebucket.s3.amazonaws.com",
      "/test.txt",
      { region: "us-east-1", accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
      86400,
      new Date("2013-05-24T00:00:00Z"),
    );
    expect(url).toBe(
      "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
    );
  });

  it("S3: custom endpoints are path-style and keys are encoded per segment", () => {
    const url = new URL(
      presignS3Get({ bucket: "b", region: "auto", endpoint: "https://r2.example:8443", accessKeyId: "k", secretAccessKey: "s" }, "a dir/ü+x.jpg", 60),
    );
    expect(url.host).toBe("r2.example:8443");
    expect(url.pathname).toBe("/b/a%20dir/%C3%BC%2Bx.jpg");
    expect(url.searchParams.get("X-Amz-Expires")).toBe("60");
  });

  it("GCS: a V4 signature over the canonical request that the service account's public key verifies", () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const at = new Date("2026-01-02T03:04:05Z");
    const url = new URL(
      signGcsGet(
        { bucket: "bkt", clientEmail: "sa@p.iam.gserviceaccount.com", privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
        "thumbs/0.jpg",
        3600,
        at,
      ),
    );
    expect(url.origin).toBe("https://storage.googleapis.com");
    expect(url.pathname).toBe("/bkt/thumbs/0.jpg");
    const q = url.searchParams;
    expect(q.get("X-Goog-Credential")).toBe("sa@p.iam.gserviceaccount.com/20260102/auto/storage/goog4_request");
    expect(q.get("X-Goog-Date")).toBe("20260102T030405Z");
    const query = url.search.slice(1).split("&X-Goog-Signature=")[0]!;
    const canonical = ["GET", "/bkt/thumbs/0.jpg", query, "host:storage.googleapis.com", "", "host", "UNSIGNED-PAYLOAD"].join("\n");
    const toSign = ["GOOG4-RSA-SHA256", "20260102T030405Z", "20260102/auto/storage/goog4_request", createHash("sha256").update(canonical).digest("hex")].join(
      "\n",
    );
    expect(
      createVerify("RSA-SHA256")
        .update(toSign)
        .verify(publicKey, Buffer.from(q.get("X-Goog-Signature")!, "hex")),
    ).toBe(true);
  });
});
