// The blob port and its adapters: S3 and S3-compatible (R2, MinIO), GCS, read-only HTTP, a local folder.
export { BlobError, joinKey, type BlobErrorKind, type BlobStore } from "./port.js";
export { r2Endpoint, S3Blob, type R2Jurisdiction, type S3Location } from "./s3.js";
export { GCS_DEFAULT_ENDPOINT, GcsBlob, parseServiceAccount, type GcsLocation, type ServiceAccount } from "./gcs.js";
export { HttpBlob, type HttpLocation } from "./http.js";
export { LocalBlob } from "./local.js";
export { fetchUrlToFile, parseStorageUrl, type StorageUrl } from "./url.js";
