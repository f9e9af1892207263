package devenv

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// WebhooksPath lists what the local webhook receiver got, next to the API.
const WebhooksPath = "/_dev/webhooks"

// DefaultWebhookSchedule is make dev's retry schedule: seconds instead of
// the deployed hours, so a failure's retries show within a walkthrough.
const DefaultWebhookSchedule = "1s,2s,4s"

// receiver is make dev's webhook endpoint, over TLS on loopback. It
// verifies every request's Standard Webhooks signature with the secrets of
// the demo tenant's subscriptions and answers by path: /ok 200, /fail 500,
// /flaky 503 to a message's first attempt then 200, /gone 410.
type receiver struct {
	srv     *httptest.Server
	secrets func(context.Context) ([]webhook.Secret, error)
	mu      sync.Mutex
	seen    map[string]int // attempts per webhook-id on /flaky
	got     []json.RawMessage
	changed chan struct{}
}

// receivedWebhook is one request the receiver got, as WebhooksPath lists
// it.
type receivedWebhook struct {
	WebhookID string `json:"webhook_id"`
	Path      string `json:"path"`
	Status    int    `json:"status"`
	Verified  bool   `json:"verified"`
	Error     string `json:"error,omitempty"`
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
}

func newReceiver(secrets func(context.Context) ([]webhook.Secret, error)) *receiver {
	r := &receiver{secrets: secrets, seen: map[string]int{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	return r
}

// client is the dispatcher's HTTP client in make dev: it trusts the system
// roots, the receiver's certificate and extra, and allows loopback
// targets.
func (r *receiver) client(timeout time.Duration, extra ...*x509.Certificate) *http.Client {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pool.AddCert(r.srv.Certificate())
	for _, c := range extra {
		pool.AddCert(c)
	}
	tlsCfg := r.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsCfg.RootCAs = pool
	return webhook.NewHTTPClient(webhook.ClientOptions{Timeout: timeout, AllowPrivate: true, TLSConfig: tlsCfg})
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	rec := receivedWebhook{WebhookID: req.Header.Get(webhook.HeaderID), Path: req.URL.Path}
	var ev struct {
		ID   string `json:"event_id"`
		Type string `json:"event_type"`
	}
	_ = json.Unmarshal(body, &ev)
	rec.EventID, rec.EventType = ev.ID, ev.Type
	secrets, err := r.secrets(req.Context())
	if err == nil {
		err = (&webhook.Verifier{Secrets: secrets}).Verify(req.Header, body)
	}
	rec.Verified = err == nil
	if err != nil {
		rec.Error = err.Error()
	}
	r.mu.Lock()
	switch {
	case !rec.Verified:
		rec.Status = http.StatusUnauthorized
	case strings.HasSuffix(req.URL.Path, "/fail"):
		rec.Status = http.StatusInternalServerError
	case strings.HasSuffix(req.URL.Path, "/gone"):
		rec.Status = http.StatusGone
	case strings.HasSuffix(req.URL.Path, "/flaky"):
		r.seen[rec.WebhookID]++
		rec.Status = http.StatusOK
		if r.seen[rec.WebhookID] == 1 {
			rec.Status = http.StatusServiceUnavailable
		}
	default:
		rec.Status = http.StatusOK
	}
	line, _ := json.Marshal(rec)
	r.got = append(r.got, line)
	if len(r.got) > maxKept {
		r.got = r.got[len(r.got)-maxKept:]
	}
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	r.mu.Unlock()
	w.WriteHeader(rec.Status)
	_, _ = io.WriteString(w, http.StatusText(rec.Status))
}

// ServeHTTP lists the received webhooks, oldest first, as
// {"webhooks":[...]}; with wait=N (seconds, at most 30) and min=M it waits
// up to N seconds for at least M of them (default 1).
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"error":{"code":"method_not_allowed","message":"use GET"}}` + "\n"))
		return
	}
	wait, atLeast := 0, 1
	for name, dst := range map[string]*int{"wait": &wait, "min": &atLeast} {
		if v := req.URL.Query().Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (name == "wait" && n > 30) || n > maxKept {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":{"code":"invalid_parameter","message":"wait must be whole seconds from 0 to 30, min a count from 0 to 1000"}}` + "\n"))
				return
			}
			*dst = n
		}
	}
	deadline := time.After(time.Duration(wait) * time.Second)
	for {
		r.mu.Lock()
		if len(r.got) >= atLeast || wait == 0 {
			out := append([]json.RawMessage{}, r.got...)
			r.mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]any{"webhooks": out, "receiver": r.srv.URL})
			return
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			wait = 0
		case <-req.Context().Done():
			return
		}
	}
}

// opener opens a subscription's stored signing secret; *secretbox.Box
// implements it.
type opener interface {
	Open(ctx context.Context, tenant, subscriptionID, stored string) (webhook.Secret, error)
}

// tenantSecrets returns every signing secret of the tenant's
// subscriptions, opened with box (they are stored sealed), for the
// receiver's verification. A secret that will never open is skipped (the
// request then fails verification, which the receiver reports); KMS
// failing is an error.
func tenantSecrets(list func(context.Context, string) ([]event.Subscription, error), box opener, tenant string) func(context.Context) ([]webhook.Secret, error) {
	return func(ctx context.Context) ([]webhook.Secret, error) {
		subs, err := list(ctx, tenant)
		if err != nil {
			return nil, err
		}
		var out []webhook.Secret
		for _, s := range subs {
			for _, raw := range s.Secrets {
				sec, err := box.Open(ctx, tenant, s.ID, raw)
				switch {
				case errors.Is(err, webhook.ErrInvalidSecret):
				case err != nil:
					return nil, err
				default:
					out = append(out, sec)
				}
			}
		}
		return out, nil
	}
}
