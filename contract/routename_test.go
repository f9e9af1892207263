package contract_test

import (
	"regexp"
	"testing"

	"github.com/triggers-dev/triggers/contract"
)

// The runtime's query-latency metric uses the contract's names.
func TestRequestLatencyNames(t *testing.T) {
	for _, tt := range []struct{ name, got, want string }{
		{"contract.MetricRequestLatency", contract.MetricRequestLatency, contract.MetricRequestLatency},
		{"contract.DimensionRoute", contract.DimensionRoute, contract.DimensionRoute},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q (contract)", tt.name, tt.got, tt.want)
		}
	}
}

var param = regexp.MustCompile(`\{[^}]+\}`)

func TestRouteOf(t *testing.T) {
	for _, tt := range []struct{ method, path, want string }{
		{"GET", "/v1/inbox", "GET /v1/inbox"},
		{"POST", "/v1/events", "POST /v1/events"},
		{"POST", "/v1/events/batch", "POST /v1/events/batch"},
		{"GET", "/v1/events/01JABCDEF", "GET /v1/events/{event_id}"},
		{"PATCH", "/v1/events/01JABCDEF", "PATCH /v1/events/{event_id}"},
		{"POST", "/v1/inbox/ack", "POST /v1/inbox/ack"},
		// A literal path is never a parameter's value: GET on the batch
		// path is not "GET /v1/events/{event_id}".
		{"GET", "/v1/events/batch", contract.RouteOther},
		{"DELETE", "/v1/inbox", contract.RouteOther},
		{"GET", "/v1/events/", contract.RouteOther},
		{"GET", "/v1/events/a/b/c", contract.RouteOther},
		{"GET", "/nope", contract.RouteOther},
		{"GET", "", contract.RouteOther},
	} {
		if got := contract.RouteOf(tt.method, tt.path); got != tt.want {
			t.Errorf("RouteOf(%q, %q) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
	// Every route names itself, with any parameter value; so the values
	// are bounded by len(Routes())+1.
	for _, r := range contract.Routes() {
		path := param.ReplaceAllString(r.Path, "x1")
		if got := contract.RouteOf(r.Method, path); got != r.String() {
			t.Errorf("RouteOf(%q, %q) = %q, want %q", r.Method, path, got, r.String())
		}
	}
}
