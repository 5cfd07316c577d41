// Package media is the Go SDK of the media.v1 API: connect-go clients of every service (the binary
// protobuf codec, which is connect-go's default and the one that works: the service's JSON uses the
// spec's lowercase enum names, which protobuf JSON cannot read), credentials on every call,
// retries of mutating calls under one Idempotency-Key, typed errors carrying the field violations,
// and helpers to follow jobs and videos, page through lists, upload files and verify webhooks.
package media

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"time"

	"connectrpc.com/connect"

	"media/clients/go/gen/media/v1/mediav1connect"
)

// Options configure a Client; BaseURL is required.
type Options struct {
	BaseURL        string        // e.g. https://media.example.com (no path)
	APIKey         string        // ak_…, sent as Authorization: Bearer
	OrganizationID string        // X-Organization-ID; an app-scoped key implies it
	MaxAttempts    int           // attempts of a retryable call; default 4
	Backoff        time.Duration // first backoff, doubled each attempt with jitter; default 200 ms
	HTTPClient     *http.Client  // default http.DefaultClient
}

// Client holds one connect-go client per service.
type Client struct {
	APIKeys       mediav1connect.APIKeyServiceClient
	Apps          mediav1connect.AppServiceClient
	Health        mediav1connect.HealthServiceClient
	Jobs          mediav1connect.JobServiceClient
	Organizations mediav1connect.OrganizationServiceClient
	Origins       mediav1connect.OriginServiceClient
	Presets       mediav1connect.PresetServiceClient
	Users         mediav1connect.UserServiceClient
	Videos        mediav1connect.VideoServiceClient
	Webhooks      mediav1connect.WebhookServiceClient
	http          *http.Client
}

var baseURL = regexp.MustCompile(`^https?://[^/]+/?$`)

// New makes a Client; a malformed BaseURL is an error, not a panic at the first call.
func New(o Options) (*Client, error) {
	if !baseURL.MatchString(o.BaseURL) {
		return nil, fmt.Errorf("media: BaseURL must be http(s)://host[:port] with no path, not %q", o.BaseURL)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	url := strings.TrimSuffix(o.BaseURL, "/")
	opts := []connect.ClientOption{connect.WithInterceptors(&interceptor{o: o})}
	return &Client{
		APIKeys:       mediav1connect.NewAPIKeyServiceClient(hc, url, opts...),
		Apps:          mediav1connect.NewAppServiceClient(hc, url, opts...),
		Health:        mediav1connect.NewHealthServiceClient(hc, url, opts...),
		Jobs:          mediav1connect.NewJobServiceClient(hc, url, opts...),
		Organizations: mediav1connect.NewOrganizationServiceClient(hc, url, opts...),
		Origins:       mediav1connect.NewOriginServiceClient(hc, url, opts...),
		Presets:       mediav1connect.NewPresetServiceClient(hc, url, opts...),
		Users:         mediav1connect.NewUserServiceClient(hc, url, opts...),
		Videos:        mediav1connect.NewVideoServiceClient(hc, url, opts...),
		Webhooks:      mediav1connect.NewWebhookServiceClient(hc, url, opts...),
		http:          hc,
	}, nil
}

// Reads and streams are safe to repeat without a key; every other method changes something.
var read = regexp.MustCompile(`/(Get\w*|List\w*|Retrieve\w*|Check\w*|Watch)$`)

type interceptor struct{ o Options }

func (i *interceptor) auth(h http.Header) {
	if i.o.APIKey != "" {
		h.Set("Authorization", "Bearer "+i.o.APIKey)
	}
	if i.o.OrganizationID != "" {
		h.Set("X-Organization-ID", i.o.OrganizationID)
	}
}

func retryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeResourceExhausted, connect.CodeAborted:
		return true
	case connect.CodeUnknown: // no answer at all (connection refused or reset)
		var ce *connect.Error
		return !errors.As(err, &ce) || ce.Meta().Get("Content-Type") == ""
	}
	return false
}

func (i *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		i.auth(req.Header())
		procedure := req.Spec().Procedure
		// One key for every attempt: the service replays the first answer instead of acting twice.
		if !read.MatchString(procedure) && req.Header().Get("Idempotency-Key") == "" {
			req.Header().Set("Idempotency-Key", rand.Text())
		}
		for attempt := 1; ; attempt++ {
			res, err := next(ctx, req)
			if err == nil {
				return res, nil
			}
			if !retryable(err) || attempt >= i.o.MaxAttempts || ctx.Err() != nil {
				return nil, asAPIError(err, procedure)
			}
			wait := time.Duration(float64(i.o.Backoff) * math.Pow(2, float64(attempt-1)) * (0.5 + mrand.Float64()))
			select {
			case <-ctx.Done():
				return nil, asAPIError(ctx.Err(), procedure)
			case <-time.After(wait):
			}
		}
	}
}

func (i *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		i.auth(conn.RequestHeader())
		return conn
	}
}

func (i *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
