package media

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// WebhookError says why a delivery was refused: Reason is "malformed" (the header cannot be read),
// "timestamp" (outside the tolerance) or "mismatch" (no v1 entry matches a secret). Answer 400.
type WebhookError struct {
	Reason  string
	Message string
}

func (e *WebhookError) Error() string {
	return "media: webhook refused (" + e.Reason + "): " + e.Message
}

// WebhookEvent is the delivered envelope; Data is the resource (a job, output or video) as JSON.
type WebhookEvent struct {
	ID         string          `json:"id"`
	Object     string          `json:"object"`
	Type       string          `json:"type"`
	APIVersion string          `json:"api_version"`
	CreatedAt  string          `json:"created_at"`
	Data       json.RawMessage `json:"data"`
}

// VerifyOptions: Tolerance defaults to 5 minutes; Now to the clock.
type VerifyOptions struct {
	Tolerance time.Duration
	Now       time.Time
}

var hex64 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
var unixTime = regexp.MustCompile(`^\d{1,12}$`)

// VerifyWebhook checks a delivery's Media-Signature header (t=<unix>,v1=<hex>[,v1=<hex>]: HMAC-SHA256
// of "<t>.<raw body>" keyed by an endpoint secret) against every secret given (new and old during a
// rotation), in constant time, within the tolerance, and returns the parsed event. body must be the
// raw bytes as received.
func VerifyWebhook(body []byte, header string, secrets []string, o VerifyOptions) (*WebhookEvent, error) {
	if len(secrets) == 0 {
		return nil, errors.New("media: VerifyWebhook needs at least one secret")
	}
	for _, s := range secrets {
		if s == "" {
			return nil, errors.New("media: VerifyWebhook was given an empty secret")
		}
	}
	t, signatures, err := parseSignature(header)
	if err != nil {
		return nil, err
	}
	tolerance := o.Tolerance
	if tolerance == 0 {
		tolerance = 5 * time.Minute
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	age := float64(now.UnixNano())/1e9 - float64(t)
	if math.Abs(age) > tolerance.Seconds() {
		return nil, &WebhookError{"timestamp", fmt.Sprintf("the signature's time is %.0f s from now (tolerance %s)", age, tolerance)}
	}
	match := false
	// Every secret against every entry, so the time taken does not tell which matched.
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(strconv.FormatInt(t, 10) + "."))
		mac.Write(body)
		expected := mac.Sum(nil)
		for _, candidate := range signatures {
			if !hex64.MatchString(candidate) {
				continue
			}
			got, _ := hex.DecodeString(candidate)
			if hmac.Equal(expected, got) {
				match = true
			}
		}
	}
	if !match {
		return nil, &WebhookError{"mismatch", "no v1 signature matches the secrets given"}
	}
	var event WebhookEvent
	if err := json.Unmarshal(body, &event); err != nil {
		return nil, fmt.Errorf("media: the signed body is not an event: %w", err)
	}
	return &event, nil
}

func parseSignature(header string) (int64, []string, error) {
	if header == "" {
		return 0, nil, &WebhookError{"malformed", "no Media-Signature header"}
	}
	var t string
	seen := false
	var signatures []string
	for _, part := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "t":
			if seen {
				return 0, nil, &WebhookError{"malformed", "Media-Signature has two timestamps"}
			}
			seen, t = true, value
		case "v1":
			signatures = append(signatures, value)
		}
	}
	if !seen || !unixTime.MatchString(t) {
		return 0, nil, &WebhookError{"malformed", "Media-Signature has no unix timestamp t="}
	}
	if len(signatures) == 0 {
		return 0, nil, &WebhookError{"malformed", "Media-Signature has no v1 entry"}
	}
	n, _ := strconv.ParseInt(t, 10, 64)
	return n, signatures, nil
}
