"""The Python SDK's tour, run by test/clients/sdks.test.ts against a live server (and a template for
yours): an origin and a job followed with Watch to completion, a refused request and its field, a
clip uploaded in parts (interrupted after the first, then resumed) until it plays, a list read page
by page, and the job's webhook received over HTTPS and verified with the helper. Prints one JSON
line of what it saw. Environment: as clients/typescript/examples/tour.ts."""

import http.server
import json
import os
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from media_sdk import MediaApiError, MediaClient, UploadState, WebhookVerificationError, all_videos, follow_job, paginate, upload_file, verify_webhook, wait_until_playable  # noqa: E402
from media_sdk.gen.media.v1.api_key_pb import CreateApiKeyRequest, ListApiKeysRequest  # noqa: E402
from media_sdk.gen.media.v1.job_pb import AudioTrack, CreateJobRequest, OutputSpec, OutputType, VideoVariant  # noqa: E402
from media_sdk.gen.media.v1.origin_pb import AccessKeyCredentials, CreateOriginRequest, OriginPermission, S3OriginConfig  # noqa: E402
from media_sdk.gen.media.v1.preset_pb import AudioCodec, VideoCodec  # noqa: E402
from media_sdk.gen.media.v1.video_pb import ListUploadPartsRequest  # noqa: E402
from media_sdk.gen.media.v1.webhook_pb import CreateWebhookEndpointRequest  # noqa: E402

env = os.environ.__getitem__
seen: dict = {"sdk": "python"}
secrets: list[str] = []
events: list[dict] = []
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver: every delivery verified with the helper before it is believed."""

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        with lock:
            try:
                events.append(verify_webhook(raw, self.headers.get("media-signature"), secrets))
                status = 200
            except WebhookVerificationError:
                status = 400
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"ok" if status == 200 else b"refused")

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(env("WEBHOOK_TLS_CERT"), env("WEBHOOK_TLS_KEY"))
server.socket = tls.wrap_socket(server.socket, server_side=True)
threading.Thread(target=server.serve_forever, daemon=True).start()

with MediaClient(env("MEDIA_URL"), api_key=env("MEDIA_API_KEY"), organization_id=env("MEDIA_ORGANIZATION_ID")) as client:
    hook = client.webhooks.create_webhook_endpoint(CreateWebhookEndpointRequest(url=f"https://127.0.0.1:{server.server_address[1]}/hooks", enabled_events=["job.succeeded"]))
    with lock:
        secrets.append(hook.endpoint.secret)

    # An origin, and a request the service refuses: the error names the field.
    credentials = AccessKeyCredentials(access_key_id=env("S3_ACCESS_KEY_ID"), secret_access_key=env("S3_SECRET_ACCESS_KEY"))
    origin = client.origins.create(
        CreateOriginRequest(name="sdk tour (python)", permissions=[OriginPermission.READ, OriginPermission.WRITE], s3=S3OriginConfig(bucket=env("S3_BUCKET"), region="us-east-1", credentials=credentials))
    ).origin
    seen["origin_id"] = origin.id
    try:
        client.jobs.create(CreateJobRequest(input_url=env("INPUT_URL"), output_origin_id=origin.id))
        seen["refused"] = "not refused"
    except MediaApiError as e:
        seen["refused"] = {"code": e.code.value, "fields": [v.field for v in e.field_violations]}

    # A job, followed with Watch until it ends.
    output = OutputSpec(type=OutputType.MP4, video=[VideoVariant(codec=VideoCodec.H264, width=320, height=180)], audio=[AudioTrack(codec=AudioCodec.AAC, bitrate_kbps=64)])
    created = client.jobs.create(CreateJobRequest(input_url=env("INPUT_URL"), output_origin_id=origin.id, outputs=[output], metadata={"tour": "python"}))
    watched: list[str] = []
    job = follow_job(client, created.job.id, lambda _job, event_type: watched.append(event_type))
    seen.update(job_id=job.id, job_status=job.status.name.lower(), watch_events=watched)

    # A clip uploaded in parts: the first call stops after one part, the second resumes from the state.
    state: list[UploadState] = []

    class Stop(Exception):
        pass

    def stop_after_first(_stored: int, _total: int) -> None:
        raise Stop()

    try:
        upload_file(client, env("CLIP"), title="sdk tour (python)", part_size_bytes=5 * 1024 * 1024, on_state=state.append, on_progress=stop_after_first)
        seen["interrupted"] = False
    except Stop:
        seen["interrupted"] = True
    resumed = len(client.videos.list_upload_parts(ListUploadPartsRequest(id=state[0].video_id, upload_id=state[0].upload_id)).stored)
    uploaded = upload_file(client, env("CLIP"), resume=state[0])
    video = wait_until_playable(client, uploaded.id)
    seen.update(video_id=video.id, video_status=video.status.name.lower(), parts_before_resume=resumed, playback_url=video.playback_url or "")

    # A list read two at a time, every page.
    for name in ("tour key 1", "tour key 2"):
        client.api_keys.create(CreateApiKeyRequest(name=name))
    pages = 0

    def list_keys(request):
        global pages
        pages += 1
        return client.api_keys.list(request)

    keys = [k.id for k in paginate(list_keys, ListApiKeysRequest(), lambda r: r.api_keys, page_size=2)]
    videos = [v.id for v in all_videos(client, page_size=1)]
    seen.update(listed_keys=len(keys), key_pages=pages, listed_videos=videos)

    # The job's webhook, verified; and a tampered copy refused.
    deadline = time.time() + 60
    event = None
    while event is None and time.time() < deadline:
        with lock:
            event = next((e for e in events if e["data"].get("id") == job.id), None)
        time.sleep(0.2)
    seen["webhook"] = {"type": event["type"], "job_id": event["data"]["id"], "id": event["id"]} if event else None
    try:
        verify_webhook(b'{"tampered":true}', f"t={int(time.time())},v1={'0' * 64}", secrets)
        seen["tampered"] = "accepted"
    except WebhookVerificationError as e:
        seen["tampered"] = e.reason

server.shutdown()
print(json.dumps(seen))
