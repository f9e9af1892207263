package devenv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
)

// The local receiver verifies with the tenant's secrets as stored: sealed
// ones opened on local-kms, legacy plain ones as they are; one that will
// never open is skipped; local-kms down is an error, not "no secrets".
func TestReceiverOpensSealedSecrets(t *testing.T) {
	ctx := context.Background()
	kms := kmstest.Start(t)
	box, err := secretbox.New(kmstest.Client(kms.Endpoint), kms.Key(t), secretbox.Options{CacheTTL: -1})
	require.NoError(t, err)
	sealed, legacy := webhook.NewSecret(), webhook.NewSecret()
	sealedStored, err := box.Seal(ctx, "demo", "sub_1", sealed)
	require.NoError(t, err)
	foreign, err := box.Seal(ctx, "other", "sub_9", webhook.NewSecret())
	require.NoError(t, err)
	subs := []event.Subscription{
		{ID: "sub_1", Secrets: []string{sealedStored}},
		{ID: "sub_2", Secrets: []string{legacy.Encode(), foreign}},
	}
	list := func(_ context.Context, tenant string) ([]event.Subscription, error) {
		assert.Equal(t, "demo", tenant) // may run off the test's goroutine: no require
		return subs, nil
	}
	secrets := tenantSecrets(list, box, "demo")
	got, err := secrets(ctx)
	require.NoError(t, err)
	var enc []string
	for _, s := range got {
		enc = append(enc, s.Encode())
	}
	assert.Equal(t, []string{sealed.Encode(), legacy.Encode()}, enc, "the foreign ciphertext is skipped")

	// A request signed with the sealed secret is verified and answered.
	rcv := newReceiver(secrets)
	defer rcv.srv.Close()
	body := []byte(`{"event_id":"e1","event_type":"a.b"}`)
	req, err := http.NewRequest(http.MethodPost, rcv.srv.URL+"/ok", bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, webhook.Sign(req.Header, "e1", time.Now(), body, sealed))
	res, err := rcv.srv.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	var rec receivedWebhook
	require.NoError(t, json.Unmarshal(rcv.got[0], &rec))
	assert.True(t, rec.Verified, "%+v", rec)

	require.NoError(t, kms.Stop())
	_, err = secrets(ctx)
	assert.ErrorIs(t, err, secretbox.ErrUnavailable)
}

// The dispatcher's client trusts the certificates Options.WebhookRoots
// adds (another https receiver on loopback), besides the receiver's.
func TestReceiverClientTrustsExtraRoots(t *testing.T) {
	rcv := newReceiver(func(context.Context) ([]webhook.Secret, error) { return nil, nil })
	defer rcv.srv.Close()
	// httptest's servers share one certificate: this one gets its own.
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	other.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	other.StartTLS()
	defer other.Close()
	require.False(t, other.Certificate().Equal(rcv.srv.Certificate()))

	_, err := rcv.client(5 * time.Second).Get(other.URL)
	require.Error(t, err, "without it, the other receiver's certificate is unknown")
	res, err := rcv.client(5*time.Second, other.Certificate()).Get(other.URL)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNoContent, res.StatusCode)
	res, err = rcv.client(5*time.Second, other.Certificate()).Get(rcv.srv.URL + "/ok")
	require.NoError(t, err, "the receiver's own certificate is still trusted")
	res.Body.Close()
}

// selfSigned returns a new self-signed certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other receiver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
