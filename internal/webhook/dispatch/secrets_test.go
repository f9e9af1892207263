package dispatch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/schema"
)

// sealedWorld is a dispatcher whose subscriptions' secrets are sealed with
// a key on a local-kms of the test's own.
type sealedWorld struct {
	t    *testing.T
	kms  *kmstest.Local
	box  *secretbox.Box
	st   *store.Store
	d    *dispatch.Dispatcher
	mu   sync.Mutex
	now  time.Time
	reqs []http.Header
	body [][]byte
	url  string
	// client reaches the receiver (its test certificate trusted).
	client *http.Client
}

func newSealedWorld(t *testing.T) *sealedWorld {
	w := &sealedWorld{t: t, now: time.Now().UTC(), kms: kmstest.Start(t)}
	box, err := secretbox.New(w.kms.Client, w.kms.Key(t), secretbox.Options{})
	require.NoError(t, err)
	w.box = box
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.reqs = append(w.reqs, r.Header.Clone())
		w.body = append(w.body, b)
		w.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL + "/hooks"
	w.st = store.New(db.Client, db.CreateTable(t, schema.Events()))
	w.client = webhook.NewHTTPClient(webhook.ClientOptions{AllowPrivate: true, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	w.d, err = dispatch.New(dispatch.Config{
		Store: w.st, Queue: &recordingQueue{}, Now: w.clock, Rand: half{}, Secrets: box,
		Client: w.client, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	return w
}

func (w *sealedWorld) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *sealedWorld) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

// subscribe stores a subscription whose secret is stored as store(id, sec).
func (w *sealedWorld) subscribe(tenant string, stored func(id string, sec webhook.Secret) string) (string, webhook.Secret) {
	w.t.Helper()
	id, err := event.NewSubscriptionID(nil)
	require.NoError(w.t, err)
	sec := webhook.NewSecret()
	require.NoError(w.t, w.st.CreateSubscription(context.Background(), tenant, event.Subscription{
		ID: id, URL: w.url, EventTypes: []string{}, CreatedAt: event.FormatTime(w.clock()), Secrets: []string{stored(id, sec)},
	}))
	return id, sec
}

func (w *sealedWorld) seal(tenant string) func(string, webhook.Secret) string {
	return func(id string, sec webhook.Secret) string {
		s, err := w.box.Seal(context.Background(), tenant, id, sec)
		require.NoError(w.t, err)
		return s
	}
}

func plain(_ string, sec webhook.Secret) string { return sec.Encode() }

// deliver makes a new event's first round and returns the request the
// receiver got.
func (w *sealedWorld) deliver(tenant string) (http.Header, []byte, error) {
	w.t.Helper()
	e, err := event.New(event.CreateRequest{EventType: "order.paid", Payload: eventtest.Payload(w.t, `{"n":1}`)}, w.clock(), 24*time.Hour, event.Metadata{})
	require.NoError(w.t, err)
	require.NoError(w.t, w.st.Put(context.Background(), tenant, e))
	n := len(w.requests())
	if err := w.d.HandleEvent(context.Background(), tenant, e.ID); err != nil {
		return nil, nil, err
	}
	require.Len(w.t, w.requests(), n+1, "one request")
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reqs[n], w.body[n], nil
}

func (w *sealedWorld) requests() []http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]http.Header(nil), w.reqs...)
}

// verifies reports whether a receiver holding only sec accepts the request.
func (w *sealedWorld) verifies(h http.Header, body []byte, sec webhook.Secret) bool {
	return (&webhook.Verifier{Secrets: []webhook.Secret{sec}, Now: w.clock}).Verify(h, body) == nil
}

// Sealed secrets sign; across a rotation both the new and the previous
// secret sign until the overlap ends, then only the new one.
func TestSealedSecretsSignThroughRotation(t *testing.T) {
	w := newSealedWorld(t)
	id, old := w.subscribe("tenant-a", w.seal("tenant-a"))
	h, body, err := w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, old), "signed with the sealed secret")

	neu := webhook.NewSecret()
	until := w.clock().Add(time.Hour).Truncate(time.Second)
	_, err = w.st.RotateSecret(context.Background(), "tenant-a", id, w.seal("tenant-a")(id, neu), w.clock(), until)
	require.NoError(t, err)
	h, body, err = w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, neu), "the new secret signs")
	assert.True(t, w.verifies(h, body, old), "the previous secret signs during the overlap")

	w.advance(time.Hour + time.Second)
	h, body, err = w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, neu))
	assert.False(t, w.verifies(h, body, old), "the overlap is over")
}

// A secret stored in plain text before sealing still signs; a rotation
// seals the new one and both sign during the overlap.
func TestLegacyPlainSecretStillSigns(t *testing.T) {
	w := newSealedWorld(t)
	id, old := w.subscribe("tenant-a", plain)
	h, body, err := w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, old))

	neu := webhook.NewSecret()
	_, err = w.st.RotateSecret(context.Background(), "tenant-a", id, w.seal("tenant-a")(id, neu), w.clock(), w.clock().Add(time.Hour))
	require.NoError(t, err)
	h, body, err = w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, neu))
	assert.True(t, w.verifies(h, body, old))
}

// A previous secret that will never open (sealed for another
// subscription) is left out, and the newest and the previous secrets that
// open still sign; a newest that does not open fails the round (the
// message is retried), sending nothing and recording nothing.
func TestUnopenableSecrets(t *testing.T) {
	w := newSealedWorld(t)
	other, _ := w.subscribe("tenant-b", w.seal("tenant-b"))
	id, _ := w.subscribe("tenant-a", w.seal("tenant-a"))
	foreign := w.seal("tenant-b")(other, webhook.NewSecret())
	neu, newest := webhook.NewSecret(), webhook.NewSecret()
	_, err := w.st.RotateSecret(context.Background(), "tenant-a", id, w.seal("tenant-a")(id, neu), w.clock(), w.clock().Add(time.Hour))
	require.NoError(t, err)
	// The previous secret replaced by one sealed for tenant-b's subscription.
	_, err = w.st.RotateSecret(context.Background(), "tenant-a", id, foreign, w.clock(), w.clock().Add(time.Hour))
	require.NoError(t, err)
	_, err = w.st.RotateSecret(context.Background(), "tenant-a", id, w.seal("tenant-a")(id, newest), w.clock(), w.clock().Add(time.Hour))
	require.NoError(t, err)
	sub, err := w.st.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	require.Len(t, sub.Secrets, 3)
	require.Equal(t, foreign, sub.Secrets[1])
	h, body, err := w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, newest), "the newest secret signs")
	assert.True(t, w.verifies(h, body, neu), "so does the previous one that opens")
	assert.Len(t, strings.Fields(h.Get(webhook.HeaderSignature)), 2, "a signature per secret that opens: the unopenable one is left out")

	_, err = w.st.RotateSecret(context.Background(), "tenant-a", id, foreign, w.clock(), w.clock().Add(time.Hour))
	require.NoError(t, err)
	before := len(w.requests())
	_, _, err = w.deliver("tenant-a")
	assert.ErrorIs(t, err, secretbox.ErrInvalid)
	assert.Len(t, w.requests(), before, "nothing sent")
}

// The secrets key switched to another key (WebhookOptions.SecretsKey
// changed, the old key kept or not): secrets sealed under the old key
// never open with the new one, so the round fails and sends nothing; a
// rotation of the subscription (POST .../rotate, sealed under the new
// key) restores its deliveries at once, signed with the new secret only,
// the old secret left out (docs/runbook.md, "Webhook signing secrets
// key": a rotation, not a re-creation, keeps the subscription's id).
func TestRotationAfterASecretsKeySwitch(t *testing.T) {
	w := newSealedWorld(t)
	id, old := w.subscribe("tenant-a", w.seal("tenant-a"))
	switched, err := secretbox.New(w.kms.Client, w.kms.Key(t), secretbox.Options{})
	require.NoError(t, err)
	w.box = switched
	w.d, err = dispatch.New(dispatch.Config{
		Store: w.st, Queue: &recordingQueue{}, Now: w.clock, Rand: half{}, Secrets: switched,
		Client: w.client, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)

	before := len(w.requests())
	_, _, err = w.deliver("tenant-a")
	require.ErrorIs(t, err, secretbox.ErrInvalid, "sealed under the old key")
	assert.Len(t, w.requests(), before, "nothing sent")

	neu := webhook.NewSecret()
	_, err = w.st.RotateSecret(context.Background(), "tenant-a", id, w.seal("tenant-a")(id, neu), w.clock(), w.clock().Add(24*time.Hour))
	require.NoError(t, err)
	h, body, err := w.deliver("tenant-a")
	require.NoError(t, err)
	assert.True(t, w.verifies(h, body, neu), "the new secret signs")
	assert.False(t, w.verifies(h, body, old), "the old one cannot")
	assert.Len(t, strings.Fields(h.Get(webhook.HeaderSignature)), 1, "one signature, the new secret's: the old one is left out")
}

// KMS down: the round fails with ErrUnavailable before sending or
// recording anything, so the queue message is retried.
func TestKMSDownFailsTheRound(t *testing.T) {
	w := newSealedWorld(t)
	w.subscribe("tenant-a", w.seal("tenant-a"))
	require.NoError(t, w.kms.Stop())
	e, err := event.New(event.CreateRequest{EventType: "order.paid", Payload: event.Payload{}}, w.clock(), 24*time.Hour, event.Metadata{})
	require.NoError(t, err)
	require.NoError(t, w.st.Put(context.Background(), "tenant-a", e))
	err = w.d.HandleEvent(context.Background(), "tenant-a", e.ID)
	require.Error(t, err)
	assert.True(t, errors.Is(err, secretbox.ErrUnavailable), "%v", err)
	assert.Empty(t, w.requests())
	atts, err := w.st.ListAttempts(context.Background(), "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Empty(t, atts, "no attempt recorded: the retry makes attempt 1")
}
