// A small OTLP/HTTP trace receiver for the tests: it decodes what the service exports with the
// OpenTelemetry project's own Go types (go.opentelemetry.io/proto/otlp), protobuf or JSON, keeps
// every span in memory, and answers GET /spans with them as JSON lines. The full Collector or
// Jaeger would decode the same bytes but takes far longer to build than the test setup allows.
//
//	otlp-receiver -listen 127.0.0.1:0    prints "otlp receiver listening on http://ADDR" once ready
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// span is one received span, flattened: what a test needs to check a trace's shape.
type span struct {
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	StartNano    uint64         `json:"start_unix_nano"`
	EndNano      uint64         `json:"end_unix_nano"`
	Status       string         `json:"status"`
	Attributes   map[string]any `json:"attributes"`
	Resource     map[string]any `json:"resource"`
	Scope        string         `json:"scope"`
}

type store struct {
	mu    sync.Mutex
	spans []span
}

func value(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	default:
		return nil
	}
}

func attributes(kvs []*common.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func (s *store) add(req *collector.ExportTraceServiceRequest) int {
	var got []span
	for _, rs := range req.GetResourceSpans() {
		resource := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, span{
					TraceID:      hex.EncodeToString(sp.GetTraceId()),
					SpanID:       hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()),
					Name:         sp.GetName(),
					Kind:         sp.GetKind().String(),
					StartNano:    sp.GetStartTimeUnixNano(),
					EndNano:      sp.GetEndTimeUnixNano(),
					Status:       sp.GetStatus().GetCode().String(),
					Attributes:   attributes(sp.GetAttributes()),
					Resource:     resource,
					Scope:        ss.GetScope().GetName(),
				})
			}
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	s.mu.Unlock()
	return len(got)
}

func (s *store) traces(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &collector.ExportTraceServiceRequest{}
	isJSON := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	if isJSON {
		err = protojson.Unmarshal(raw, req)
	} else if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-protobuf") {
		err = proto.Unmarshal(raw, req)
	} else {
		http.Error(w, "Content-Type must be application/x-protobuf or application/json", http.StatusUnsupportedMediaType)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.add(req)
	// The answer in the request's encoding, as OTLP/HTTP asks.
	var out []byte
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		out, _ = protojson.Marshal(&collector.ExportTraceServiceResponse{})
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ = proto.Marshal(&collector.ExportTraceServiceResponse{})
	}
	_, _ = w.Write(out)
}

func (s *store) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	spans := append([]span(nil), s.spans...)
	s.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, sp := range spans {
		_ = enc.Encode(sp)
	}
	w.Header().Set("Content-Type", "application/jsonl")
	_, _ = w.Write(buf.Bytes())
}

func main() {
	listen := flag.String("listen", "127.0.0.1:4318", "address to listen on (port 0: any free port)")
	flag.Parse()
	s := &store{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", s.traces)
	mux.HandleFunc("GET /spans", s.list)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("otlp receiver listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
