package secretbox_test

import (
	"context"
	"encoding/base64"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
)

func TestMain(m *testing.M) {
	code := m.Run()
	kmstest.Stop()
	os.Exit(code)
}

// counting passes every call to the real local-kms client and counts
// them, so tests can tell a cache hit from a KMS call.
type counting struct {
	secretbox.KMS
	encrypts, decrypts atomic.Int64
}

func (c *counting) Encrypt(ctx context.Context, in *kms.EncryptInput, optFns ...func(*kms.Options)) (*kms.EncryptOutput, error) {
	c.encrypts.Add(1)
	return c.KMS.Encrypt(ctx, in, optFns...)
}

func (c *counting) Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	c.decrypts.Add(1)
	return c.KMS.Decrypt(ctx, in, optFns...)
}

func newBox(t *testing.T, o secretbox.Options) (*secretbox.Box, *counting, *kmstest.Local) {
	t.Helper()
	l := kmstest.Shared(t)
	c := &counting{KMS: l.Client}
	b, err := secretbox.New(c, l.Key(t), o)
	require.NoError(t, err)
	return b, c, l
}

func TestSealOpenRoundTrip(t *testing.T) {
	ctx := context.Background()
	b, c, l := newBox(t, secretbox.Options{})
	sec := webhook.NewSecret()
	stored, err := b.Seal(ctx, "tenant-a", "sub_1", sec)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(stored, secretbox.Prefix), stored)
	assert.NotContains(t, stored, webhook.SecretPrefix, "no plaintext in the stored form")
	blob, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(stored, secretbox.Prefix))
	require.NoError(t, err)
	assert.NotContains(t, string(blob), sec.Encode())
	assert.NotContains(t, string(blob), strings.TrimPrefix(sec.Encode(), webhook.SecretPrefix))

	again, err := b.Seal(ctx, "tenant-a", "sub_1", sec)
	require.NoError(t, err)
	assert.NotEqual(t, stored, again, "each seal is a fresh ciphertext")

	got, err := b.Open(ctx, "tenant-a", "sub_1", stored)
	require.NoError(t, err)
	assert.Equal(t, sec.Encode(), got.Encode())
	assert.EqualValues(t, 2, c.encrypts.Load())
	assert.EqualValues(t, 1, c.decrypts.Load())

	// The ciphertext carries the context: KMS itself decrypts it only
	// with exactly that context (what the IAM conditions allow).
	out, err := l.Client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, KeyId: aws.String(b.KeyID()), EncryptionContext: secretbox.Context("tenant-a", "sub_1")})
	require.NoError(t, err)
	assert.Equal(t, sec.Encode(), string(out.Plaintext))
	assert.Equal(t, map[string]string{
		contract.SecretContextPurpose: contract.SecretPurpose, contract.SecretContextTenant: "tenant-a", contract.SecretContextSubscription: "sub_1",
	}, secretbox.Context("tenant-a", "sub_1"))
	_, err = l.Client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, KeyId: aws.String(b.KeyID())})
	assert.Error(t, err, "no context, no plaintext")
}

// A ciphertext copied to another subscription or tenant, altered, or
// opened with another key does not open: ErrInvalid, which is also a
// webhook.ErrInvalidSecret.
func TestOpenRefusesMisplacedOrAlteredCiphertext(t *testing.T) {
	ctx := context.Background()
	b, _, l := newBox(t, secretbox.Options{})
	stored, err := b.Seal(ctx, "tenant-a", "sub_1", webhook.NewSecret())
	require.NoError(t, err)
	_, err = b.Open(ctx, "tenant-a", "sub_1", stored)
	require.NoError(t, err, "fills the cache: the refusals below must not come from it")

	blob, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(stored, secretbox.Prefix))
	flipped := append([]byte{}, blob...)
	flipped[len(flipped)-3] ^= 0x01
	other, err := secretbox.New(l.Client, l.Key(t), secretbox.Options{})
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		box                      *secretbox.Box
		tenant, sub, stored, msg string
	}{
		"other subscription": {b, "tenant-a", "sub_2", stored, "KMS refused the ciphertext"},
		"other tenant":       {b, "tenant-b", "sub_1", stored, "KMS refused the ciphertext"},
		"altered ciphertext": {b, "tenant-a", "sub_1", secretbox.Prefix + base64.StdEncoding.EncodeToString(flipped), "KMS refused the ciphertext"},
		"cut short":          {b, "tenant-a", "sub_1", stored[:len(stored)-8], "KMS refused the ciphertext"},
		"not base64":         {b, "tenant-a", "sub_1", stored[:len(stored)-1], "not standard base64"},
		"empty ciphertext":   {b, "tenant-a", "sub_1", secretbox.Prefix, "not standard base64"},
		"unknown format":     {b, "tenant-a", "sub_1", "kms2:" + strings.TrimPrefix(stored, secretbox.Prefix), "neither"},
		"another key":        {other, "tenant-a", "sub_1", stored, "KMS refused the ciphertext"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.box.Open(ctx, tc.tenant, tc.sub, tc.stored)
			require.Error(t, err)
			assert.ErrorIs(t, err, secretbox.ErrInvalid)
			assert.ErrorIs(t, err, webhook.ErrInvalidSecret)
			assert.NotErrorIs(t, err, secretbox.ErrUnavailable)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// A secret stored in plain text before sealing still opens, without KMS;
// a malformed plain one is ErrInvalidSecret.
func TestOpenLegacyPlaintext(t *testing.T) {
	b, c, _ := newBox(t, secretbox.Options{})
	sec := webhook.NewSecret()
	got, err := b.Open(context.Background(), "tenant-a", "sub_1", sec.Encode())
	require.NoError(t, err)
	assert.Equal(t, sec.Encode(), got.Encode())
	assert.Zero(t, c.decrypts.Load(), "no KMS call for a plain secret")
	_, err = b.Open(context.Background(), "tenant-a", "sub_1", "whsec_short")
	assert.ErrorIs(t, err, webhook.ErrInvalidSecret)
}

// Opened secrets are cached for CacheTTL, at most CacheSize of them
// (least recently used out first); errors are not cached.
func TestOpenCache(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	b, c, _ := newBox(t, secretbox.Options{CacheTTL: time.Minute, CacheSize: 2, Now: func() time.Time { return now }})
	var stored []string
	for _, sub := range []string{"sub_1", "sub_2", "sub_3"} {
		s, err := b.Seal(ctx, "tenant-a", sub, webhook.NewSecret())
		require.NoError(t, err)
		stored = append(stored, s)
	}
	open := func(i int) {
		t.Helper()
		_, err := b.Open(ctx, "tenant-a", []string{"sub_1", "sub_2", "sub_3"}[i], stored[i])
		require.NoError(t, err)
	}
	open(0)
	open(0)
	assert.EqualValues(t, 1, c.decrypts.Load(), "the second open is a cache hit")
	open(1)
	open(0) // sub_1 is now the most recently used
	open(2) // evicts sub_2
	assert.Equal(t, 2, b.Cached(), "bounded by CacheSize")
	assert.EqualValues(t, 3, c.decrypts.Load())
	open(0)
	assert.EqualValues(t, 3, c.decrypts.Load(), "sub_1 stayed")
	open(1)
	assert.EqualValues(t, 4, c.decrypts.Load(), "sub_2 was evicted")

	now = now.Add(time.Minute)
	open(1)
	assert.EqualValues(t, 5, c.decrypts.Load(), "expired after CacheTTL")

	// Errors are not cached: a refused ciphertext asks KMS every time.
	for range 2 {
		_, err := b.Open(ctx, "tenant-b", "sub_1", stored[0])
		require.ErrorIs(t, err, secretbox.ErrInvalid)
	}
	assert.EqualValues(t, 7, c.decrypts.Load())

	// CacheTTL < 0: no cache at all.
	nc, err := secretbox.New(c, b.KeyID(), secretbox.Options{CacheTTL: -1})
	require.NoError(t, err)
	for range 2 {
		_, err := nc.Open(ctx, "tenant-a", "sub_1", stored[0])
		require.NoError(t, err)
	}
	assert.EqualValues(t, 9, c.decrypts.Load())
	assert.Zero(t, nc.Cached())
}

// The zero Options cache an opened secret for DefaultCacheTTL, ten
// minutes: a hit one nanosecond before, a KMS call at the TTL.
func TestOpenCacheDefaultTTL(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	b, c, _ := newBox(t, secretbox.Options{Now: func() time.Time { return now }})
	stored, err := b.Seal(ctx, "tenant-a", "sub_1", webhook.NewSecret())
	require.NoError(t, err)
	open := func() {
		t.Helper()
		_, err := b.Open(ctx, "tenant-a", "sub_1", stored)
		require.NoError(t, err)
	}
	open()
	start := now
	now = start.Add(10*time.Minute - time.Nanosecond)
	open()
	assert.EqualValues(t, 1, c.decrypts.Load(), "cached until ten minutes have passed")
	assert.Equal(t, 1, b.Cached())
	now = start.Add(10 * time.Minute)
	open()
	assert.EqualValues(t, 2, c.decrypts.Load(), "expired after ten minutes")
}

// KMS down, or the key disabled: ErrUnavailable (retry later), not
// ErrInvalid; nothing sealed, nothing cached.
func TestKMSUnavailable(t *testing.T) {
	ctx := context.Background()
	own := kmstest.Start(t)
	key := own.Key(t)
	b, err := secretbox.New(own.Client, key, secretbox.Options{})
	require.NoError(t, err)
	stored, err := b.Seal(ctx, "tenant-a", "sub_1", webhook.NewSecret())
	require.NoError(t, err)

	_, err = own.Client.DisableKey(ctx, &kms.DisableKeyInput{KeyId: aws.String(key)})
	require.NoError(t, err)
	_, err = b.Seal(ctx, "tenant-a", "sub_2", webhook.NewSecret())
	assert.ErrorIs(t, err, secretbox.ErrUnavailable, "disabled key")
	_, err = b.Open(ctx, "tenant-a", "sub_1", stored)
	assert.ErrorIs(t, err, secretbox.ErrUnavailable, "disabled key")
	assert.NotErrorIs(t, err, secretbox.ErrInvalid)
	_, err = own.Client.EnableKey(ctx, &kms.EnableKeyInput{KeyId: aws.String(key)})
	require.NoError(t, err)

	require.NoError(t, own.Stop())
	fast := kmstest.Client(own.Endpoint)
	down, err := secretbox.New(fast, key, secretbox.Options{})
	require.NoError(t, err)
	_, err = down.Seal(ctx, "tenant-a", "sub_2", webhook.NewSecret())
	assert.ErrorIs(t, err, secretbox.ErrUnavailable, "engine stopped")
	_, err = down.Open(ctx, "tenant-a", "sub_1", stored)
	assert.ErrorIs(t, err, secretbox.ErrUnavailable, "engine stopped")
	assert.Zero(t, down.Cached())
}

func TestBadArguments(t *testing.T) {
	_, err := secretbox.New(nil, "k", secretbox.Options{})
	assert.ErrorContains(t, err, "no KMS client")
	_, err = secretbox.New(&counting{}, " ", secretbox.Options{})
	assert.ErrorContains(t, err, contract.EnvWebhookSecretsKey)
	b, _, _ := newBox(t, secretbox.Options{})
	_, err = b.Seal(context.Background(), "tenant-a", "sub_1", webhook.Secret{})
	assert.ErrorContains(t, err, "zero Secret")
	_, err = b.Seal(context.Background(), "", "sub_1", webhook.NewSecret())
	assert.ErrorContains(t, err, "non-empty")
}
