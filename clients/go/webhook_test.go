package media

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"
)

// The shared vectors (clients/webhook-vectors.json), which the server's signer and every SDK pass.
func TestWebhookVectors(t *testing.T) {
	raw, err := os.ReadFile("../webhook-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Verifying []struct {
			Name             string   `json:"name"`
			Header           string   `json:"header"`
			Body             string   `json:"body"`
			Secrets          []string `json:"secrets"`
			Now              int64    `json:"now"`
			ToleranceSeconds int64    `json:"tolerance_seconds"`
			Valid            bool     `json:"valid"`
			Reason           string   `json:"reason"`
		} `json:"verifying"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Verifying) < 10 {
		t.Fatalf("only %d vectors", len(vectors.Verifying))
	}
	for _, v := range vectors.Verifying {
		t.Run(v.Name, func(t *testing.T) {
			event, err := VerifyWebhook([]byte(v.Body), v.Header, v.Secrets, VerifyOptions{Tolerance: time.Duration(v.ToleranceSeconds) * time.Second, Now: time.Unix(v.Now, 0)})
			if v.Valid {
				if err != nil || event.Type != "job.succeeded" {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var we *WebhookError
			if !errors.As(err, &we) || we.Reason != v.Reason {
				t.Fatalf("want refused for %s, got %v", v.Reason, err)
			}
		})
	}
	if _, err := VerifyWebhook([]byte("{}"), "t=1,v1=00", nil, VerifyOptions{}); err == nil {
		t.Fatal("no secret must not verify")
	}
}
