// The Go SDK's tour, run by test/clients/sdks.test.ts against a live server (and a template for
// yours): an origin and a job followed with Watch to completion, a refused request and its field, a
// clip uploaded in parts (interrupted after the first, then resumed) until it plays, a list read
// page by page, and the job's webhook received over HTTPS and verified with the helper. Prints one
// JSON line of what it saw. Environment: as clients/typescript/examples/tour.ts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	media "media/clients/go"
	mediav1 "media/clients/go/gen/media/v1"
)

func env(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fail(fmt.Errorf("set %s", name))
	}
	return v
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tour:", err)
	os.Exit(1)
}

func must[T any](v T, err error) T {
	if err != nil {
		fail(err)
	}
	return v
}

func main() {
	ctx := context.Background()
	c := must(media.New(media.Options{BaseURL: env("MEDIA_URL"), APIKey: env("MEDIA_API_KEY"), OrganizationID: env("MEDIA_ORGANIZATION_ID")}))
	seen := map[string]any{"sdk": "go"}

	// A webhook receiver: every delivery verified with the helper before it is believed.
	var mu sync.Mutex
	var secrets []string
	var events []*media.WebhookEvent
	listener := must(net.Listen("tcp", "127.0.0.1:0"))
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		event, err := media.VerifyWebhook(body, r.Header.Get("Media-Signature"), secrets, media.VerifyOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		events = append(events, event)
		w.Write([]byte("ok"))
	})}
	go server.ServeTLS(listener, env("WEBHOOK_TLS_CERT"), env("WEBHOOK_TLS_KEY"))
	hook := must(c.Webhooks.CreateWebhookEndpoint(ctx, connect.NewRequest(&mediav1.CreateWebhookEndpointRequest{
		Url: "https://" + listener.Addr().String() + "/hooks", EnabledEvents: []string{"job.succeeded"},
	})))
	mu.Lock()
	secrets = []string{hook.Msg.GetEndpoint().GetSecret()}
	mu.Unlock()

	// An origin, and a request the service refuses: the error names the field.
	origin := must(c.Origins.Create(ctx, connect.NewRequest(&mediav1.CreateOriginRequest{
		Name:        "sdk tour (go)",
		Permissions: []mediav1.OriginPermission{mediav1.OriginPermission_ORIGIN_PERMISSION_READ, mediav1.OriginPermission_ORIGIN_PERMISSION_WRITE},
		S3: &mediav1.S3OriginConfig{Bucket: env("S3_BUCKET"), Region: "us-east-1", Credentials: &mediav1.AccessKeyCredentials{
			AccessKeyId: env("S3_ACCESS_KEY_ID"), SecretAccessKey: env("S3_SECRET_ACCESS_KEY"),
		}},
	}))).Msg.GetOrigin()
	seen["origin_id"] = origin.GetId()
	_, err := c.Jobs.Create(ctx, connect.NewRequest(&mediav1.CreateJobRequest{InputUrl: env("INPUT_URL"), OutputOriginId: origin.GetId()}))
	var apiErr *media.APIError
	if !errors.As(err, &apiErr) {
		fail(fmt.Errorf("want an APIError, got %v", err))
	}
	fields := []string{}
	for _, v := range apiErr.FieldViolations {
		fields = append(fields, v.GetField())
	}
	seen["refused"] = map[string]any{"code": apiErr.Code.String(), "fields": fields}

	// A job, followed with Watch until it ends.
	created := must(c.Jobs.Create(ctx, connect.NewRequest(&mediav1.CreateJobRequest{
		InputUrl:       env("INPUT_URL"),
		OutputOriginId: origin.GetId(),
		Outputs: []*mediav1.OutputSpec{{
			Type:  mediav1.OutputType_OUTPUT_TYPE_MP4,
			Video: []*mediav1.VideoVariant{{Codec: mediav1.VideoCodec_VIDEO_CODEC_H264, Width: 320, Height: 180}},
			Audio: []*mediav1.AudioTrack{{Codec: mediav1.AudioCodec_AUDIO_CODEC_AAC, BitrateKbps: 64}},
		}},
		Metadata: map[string]string{"tour": "go"},
	})))
	watched := []string{}
	job := must(c.FollowJob(ctx, created.Msg.GetJob().GetId(), func(_ *mediav1.Job, eventType string) { watched = append(watched, eventType) }))
	seen["job_id"] = job.GetId()
	seen["job_status"] = strings.ToLower(strings.TrimPrefix(job.GetStatus().String(), "JOB_STATUS_"))
	seen["watch_events"] = watched

	// A clip uploaded in parts: the first call stops after one part, the second resumes from the state.
	var state *media.UploadState
	stopCtx, stop := context.WithCancel(ctx)
	_, err = c.UploadFile(stopCtx, env("CLIP"), media.UploadOptions{
		Title: "sdk tour (go)", PartSizeBytes: 5 << 20,
		OnState:    func(s media.UploadState) error { state = &s; return nil },
		OnProgress: func(_, _ int64) { stop() },
	})
	stop()
	seen["interrupted"] = err != nil
	if state == nil {
		fail(errors.New("the upload did not start"))
	}
	parts := must(c.Videos.ListUploadParts(ctx, connect.NewRequest(&mediav1.ListUploadPartsRequest{Id: state.VideoID, UploadId: state.UploadID})))
	seen["parts_before_resume"] = len(parts.Msg.GetStored())
	uploaded := must(c.UploadFile(ctx, env("CLIP"), media.UploadOptions{Resume: state}))
	video := must(c.WaitUntilPlayable(ctx, uploaded.GetId()))
	seen["video_id"] = video.GetId()
	seen["video_status"] = strings.ToLower(strings.TrimPrefix(video.GetStatus().String(), "VIDEO_STATUS_"))
	seen["playback_url"] = video.GetPlaybackUrl()

	// A list read two at a time, every page.
	for _, name := range []string{"tour key 1", "tour key 2"} {
		must(c.APIKeys.Create(ctx, connect.NewRequest(&mediav1.CreateApiKeyRequest{Name: name})))
	}
	pages, keys := 0, 0
	for _, err := range media.Paginate(ctx, func(ctx context.Context, cursor string) ([]*mediav1.ApiKey, string, error) {
		pages++
		res, err := c.APIKeys.List(ctx, connect.NewRequest(&mediav1.ListApiKeysRequest{Pagination: &mediav1.PaginationRequest{Limit: proto.Int32(2), Cursor: cursor}}))
		if err != nil {
			return nil, "", err
		}
		return res.Msg.GetApiKeys(), res.Msg.GetPagination().GetNextCursor(), nil
	}) {
		if err != nil {
			fail(err)
		}
		keys++
	}
	videos := []string{}
	for v, err := range c.AllVideos(ctx, &mediav1.ListVideosRequest{PageSize: proto.Int32(1)}) {
		if err != nil {
			fail(err)
		}
		videos = append(videos, v.GetId())
	}
	seen["listed_keys"], seen["key_pages"], seen["listed_videos"] = keys, pages, videos

	// The job's webhook, verified; and a tampered copy refused.
	seen["webhook"] = nil
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && seen["webhook"] == nil; time.Sleep(200 * time.Millisecond) {
		mu.Lock()
		for _, e := range events {
			var data struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(e.Data, &data) == nil && data.ID == job.GetId() {
				seen["webhook"] = map[string]any{"type": e.Type, "job_id": data.ID, "id": e.ID}
			}
		}
		mu.Unlock()
	}
	_, err = media.VerifyWebhook([]byte(`{"tampered":true}`), fmt.Sprintf("t=%d,v1=%s", time.Now().Unix(), strings.Repeat("0", 64)), secrets, media.VerifyOptions{})
	var werr *media.WebhookError
	if errors.As(err, &werr) {
		seen["tampered"] = werr.Reason
	} else {
		seen["tampered"] = "accepted"
	}
	server.Close()
	out := must(json.Marshal(seen))
	fmt.Println(string(out))
}
