// Package secretbox seals webhook signing secrets with AWS KMS, so that
// the events table holds only ciphertext: its stream, the stream
// consumers, the S3 archive of expired items, backups and every principal
// allowed to read the table see no usable secret. Only a principal allowed
// to decrypt with the key (the webhook function, which signs) can open
// one; the API function, which makes secrets, may only encrypt.
//
// A secret is encrypted directly with KMS Encrypt (it is 32 bytes, far
// under KMS's 4 KB limit, and sealed only when a subscription is created
// or its secret rotated, so a data key would add a format and save
// nothing). The encryption context binds each ciphertext to its tenant and
// subscription (contract.SecretContextTenant, SecretContextSubscription)
// and to its purpose (contract.SecretPurpose): a ciphertext copied to
// another subscription or tenant, or used for anything else, does not
// decrypt, and the IAM grants allow the key for that context only.
//
// Stored form: Prefix ("kms1:") followed by the standard base64 of the
// KMS ciphertext blob. A stored value that is a plain "whsec_..." secret
// (written before secrets were sealed) still opens, without a KMS call:
// see Open. It stops being stored after two rotations.
//
// Open keeps what it opened in memory for a bounded time and number of
// entries (Options), so the webhook function calls KMS about once per
// subscription per CacheTTL, not once per attempt.
package secretbox

import (
	"container/list"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// Prefix starts the stored form of a sealed secret; the version in it
// names the format (KMS Encrypt, SYMMETRIC_DEFAULT, the encryption context
// of Context).
const Prefix = "kms1:"

// Defaults of Options.
const (
	DefaultCacheTTL  = 10 * time.Minute
	DefaultCacheSize = 4096
)

// Errors of Seal and Open; test with errors.Is.
var (
	// ErrInvalid: the stored value does not open, and never will: it is
	// not a sealed secret, was altered, was sealed for another tenant or
	// subscription, or under another key. It wraps
	// webhook.ErrInvalidSecret.
	ErrInvalid = fmt.Errorf("%w: the stored secret does not open", webhook.ErrInvalidSecret)
	// ErrUnavailable: KMS could not be used now (unreachable, throttled,
	// timed out, the key disabled or pending deletion, or access
	// denied); the same call may succeed later.
	ErrUnavailable = errors.New("the key service (KMS) is unavailable")
)

// KMS is the part of the KMS client a Box uses; *kms.Client implements it.
type KMS interface {
	Encrypt(ctx context.Context, in *kms.EncryptInput, optFns ...func(*kms.Options)) (*kms.EncryptOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Options tune a Box. Zero values take the defaults.
type Options struct {
	// CacheTTL is how long an opened secret stays in memory (also how
	// long the function keeps signing after its decrypt permission or the
	// key is taken away). Negative: no cache. Default: DefaultCacheTTL.
	CacheTTL time.Duration
	// CacheSize bounds the cached secrets; the least recently used goes
	// first. Default: DefaultCacheSize.
	CacheSize int
	// Now is the cache's clock. Default: time.Now.
	Now func() time.Time
}

// Box seals and opens the signing secrets of webhook subscriptions with
// one KMS key. It is safe for concurrent use.
type Box struct {
	kms     KMS
	keyID   string
	noCache bool // Options.CacheTTL < 0
	ttl     time.Duration
	size    int
	now     func() time.Time

	mu    sync.Mutex
	lru   *list.List // of *entry, most recently used first
	index map[string]*list.Element
}

type entry struct {
	key     string
	secret  webhook.Secret
	expires time.Time
}

// New returns a Box sealing with keyID (a key ARN, id or alias; with an
// alias, Open names the alias too, so its key must not change).
func New(client KMS, keyID string, o Options) (*Box, error) {
	if client == nil {
		return nil, errors.New("secretbox: no KMS client")
	}
	if strings.TrimSpace(keyID) == "" {
		return nil, errors.New("secretbox: no key: give the KMS key ARN (" + contract.EnvWebhookSecretsKey + ")")
	}
	b := &Box{kms: client, keyID: keyID, noCache: o.CacheTTL < 0, ttl: o.CacheTTL, size: o.CacheSize, now: o.Now,
		lru: list.New(), index: map[string]*list.Element{}}
	if b.ttl == 0 {
		b.ttl = DefaultCacheTTL
	}
	if b.size <= 0 {
		b.size = DefaultCacheSize
	}
	if b.now == nil {
		b.now = time.Now
	}
	return b, nil
}

// KeyID returns the key the Box seals with.
func (b *Box) KeyID() string { return b.keyID }

// Context returns the encryption context of the secret of tenant's
// subscription subscriptionID.
func Context(tenant, subscriptionID string) map[string]string {
	return map[string]string{
		contract.SecretContextPurpose:      contract.SecretPurpose,
		contract.SecretContextTenant:       tenant,
		contract.SecretContextSubscription: subscriptionID,
	}
}

// Seal encrypts secret for tenant's subscription subscriptionID and
// returns the form to store (Prefix + base64). Errors wrap ErrUnavailable
// (KMS failed: nothing should be stored; retry later).
func (b *Box) Seal(ctx context.Context, tenant, subscriptionID string, secret webhook.Secret) (string, error) {
	if secret.IsZero() {
		return "", errors.New("secretbox: cannot seal the zero Secret")
	}
	if tenant == "" || subscriptionID == "" {
		return "", errors.New("secretbox: a secret is sealed for a tenant and a subscription id, both non-empty")
	}
	out, err := b.kms.Encrypt(ctx, &kms.EncryptInput{
		KeyId:             aws.String(b.keyID),
		Plaintext:         []byte(secret.Encode()),
		EncryptionContext: Context(tenant, subscriptionID),
	})
	if err != nil {
		return "", fmt.Errorf("seal the signing secret of subscription %s: %w: %w", subscriptionID, ErrUnavailable, err)
	}
	return Prefix + base64.StdEncoding.EncodeToString(out.CiphertextBlob), nil
}

// Open returns the secret stored for tenant's subscription subscriptionID.
//
// A stored value starting with "whsec_" is a secret stored in plain text
// before secrets were sealed: it is parsed and returned as is (no KMS
// call), so subscriptions made before keep being signed. The API seals
// every new secret; a rotation makes the plain one the previous secret
// (signing until the overlap ends) and the next rotation drops it.
//
// Errors wrap ErrInvalid (the value will never open: altered, another
// tenant's or subscription's, another key's, not a secret) or
// ErrUnavailable (KMS failed; retry later).
func (b *Box) Open(ctx context.Context, tenant, subscriptionID, stored string) (webhook.Secret, error) {
	if strings.HasPrefix(stored, webhook.SecretPrefix) {
		return webhook.ParseSecret(stored)
	}
	enc, ok := strings.CutPrefix(stored, Prefix)
	if !ok {
		return webhook.Secret{}, fmt.Errorf("%w: subscription %s: neither %q (sealed) nor %q (plain)", ErrInvalid, subscriptionID, Prefix, webhook.SecretPrefix)
	}
	key := tenant + "\x00" + subscriptionID + "\x00" + stored
	if s, ok := b.cached(key); ok {
		return s, nil
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || len(blob) == 0 {
		return webhook.Secret{}, fmt.Errorf("%w: subscription %s: the ciphertext is not standard base64", ErrInvalid, subscriptionID)
	}
	out, err := b.kms.Decrypt(ctx, &kms.DecryptInput{
		KeyId:             aws.String(b.keyID),
		CiphertextBlob:    blob,
		EncryptionContext: Context(tenant, subscriptionID),
	})
	if err != nil {
		var ic *types.InvalidCiphertextException
		var ik *types.IncorrectKeyException
		if errors.As(err, &ic) || errors.As(err, &ik) {
			return webhook.Secret{}, fmt.Errorf("%w: subscription %s: KMS refused the ciphertext (altered, sealed for another tenant or subscription, or under another key): %w", ErrInvalid, subscriptionID, err)
		}
		return webhook.Secret{}, fmt.Errorf("open the signing secret of subscription %s: %w: %w", subscriptionID, ErrUnavailable, err)
	}
	s, err := webhook.ParseSecret(string(out.Plaintext))
	if err != nil {
		return webhook.Secret{}, fmt.Errorf("%w: subscription %s: the plaintext is not a signing secret: %w", ErrInvalid, subscriptionID, err)
	}
	b.store(key, s)
	return s, nil
}

// Cached returns how many opened secrets the Box holds now.
func (b *Box) Cached() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lru.Len()
}

func (b *Box) cached(key string) (webhook.Secret, bool) {
	if b.noCache {
		return webhook.Secret{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	el, ok := b.index[key]
	if !ok {
		return webhook.Secret{}, false
	}
	e := el.Value.(*entry)
	if !b.now().Before(e.expires) {
		b.lru.Remove(el)
		delete(b.index, key)
		return webhook.Secret{}, false
	}
	b.lru.MoveToFront(el)
	return e.secret, true
}

func (b *Box) store(key string, s webhook.Secret) {
	if b.noCache {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if el, ok := b.index[key]; ok {
		el.Value.(*entry).expires = b.now().Add(b.ttl)
		b.lru.MoveToFront(el)
		return
	}
	b.index[key] = b.lru.PushFront(&entry{key: key, secret: s, expires: b.now().Add(b.ttl)})
	for b.lru.Len() > b.size {
		last := b.lru.Back()
		b.lru.Remove(last)
		delete(b.index, last.Value.(*entry).key)
	}
}
