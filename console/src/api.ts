// The console's only way to the service: Connect clients generated from proto/ (src/gen), over the
// binary protocol, authenticated by the session cookie. Every call carries X-Media-Client, the
// header a cross-site form cannot send (docs/identity.md), and the organization being viewed.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { DescService } from "@bufbuild/protobuf";
import { APIKeyService } from "../../src/gen/media/v1/api_key_pb.js";
import { AppService } from "../../src/gen/media/v1/app_pb.js";
import { JobService } from "../../src/gen/media/v1/job_pb.js";
import { OrganizationService } from "../../src/gen/media/v1/organization_pb.js";
import { OriginService } from "../../src/gen/media/v1/origin_pb.js";
import { PresetService } from "../../src/gen/media/v1/preset_pb.js";
import { UserService } from "../../src/gen/media/v1/user_pb.js";
import { VideoService } from "../../src/gen/media/v1/video_pb.js";
import { WebhookService } from "../../src/gen/media/v1/webhook_pb.js";
import { ErrorDetailsSchema } from "../../src/gen/media/v1/common_pb.js";

let organizationId = "";

/** The organization later calls act in (X-Organization-ID). */
export function useOrganization(id: string): void {
  organizationId = id;
}

const headers: Interceptor = (next) => (req) => {
  req.header.set("x-media-client", "console");
  if (organizationId) req.header.set("x-organization-id", organizationId);
  return next(req);
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [headers],
  fetch: (input, init) => fetch(input, { ...init, credentials: "same-origin" }),
});

const client = <S extends DescService>(service: S): Client<S> => createClient(service, transport);

export const api = {
  users: client(UserService),
  organizations: client(OrganizationService),
  apps: client(AppService),
  videos: client(VideoService),
  jobs: client(JobService),
  presets: client(PresetService),
  origins: client(OriginService),
  webhooks: client(WebhookService),
  keys: client(APIKeyService),
};

/** What a page shows for a failed call: the message, and the fields it names. */
export interface Problem {
  readonly message: string;
  readonly fields: Readonly<Record<string, string>>;
  readonly signedOut: boolean;
}

export function problemOf(e: unknown): Problem {
  const error = ConnectError.from(e);
  const fields: Record<string, string> = {};
  for (const details of error.findDetails(ErrorDetailsSchema)) {
    for (const v of details.fieldViolations) fields[v.field] = v.description;
  }
  return { message: error.rawMessage, fields, signedOut: error.code === Code.Unauthenticated };
}
