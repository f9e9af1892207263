package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// SecretPrefix starts the text form of every signing secret, as the
// Standard Webhooks specification asks ("whsec_" followed by the base64 of
// the key).
const SecretPrefix = "whsec_"

// Bounds of a signing key in bytes, from the Standard Webhooks
// specification (192 to 512 bits).
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// newSecretBytes is the key length NewSecret draws: 256 bits, the size of
// a SHA-256 output, well inside the spec's bounds.
const newSecretBytes = 32

// ErrInvalidSecret is wrapped by every error of ParseSecret.
var ErrInvalidSecret = errors.New("invalid webhook secret")

// Secret is a symmetric signing key for Standard Webhooks (v1,
// HMAC-SHA256). The zero Secret is not usable: Signature and Verifier
// refuse it.
//
// A Secret does not print its key: String, GoString and LogValue give a
// redacted form, so a Secret that ends up in a log line or an error
// message leaks nothing. Encode gives the text form to store or show the
// subscriber once.
type Secret struct {
	key []byte
}

// NewSecret returns a new random secret of 32 bytes (256 bits) from
// crypto/rand.
func NewSecret() Secret {
	key := make([]byte, newSecretBytes)
	// Since Go 1.24 crypto/rand.Read never returns an error; it crashes
	// the program if the system's random source fails.
	_, _ = rand.Read(key)
	return Secret{key: key}
}

// ParseSecret parses the text form of a secret: "whsec_" followed by the
// standard base64 (RFC 4648, with or without "=" padding) of 24 to 64 key
// bytes. Anything else is an error wrapping ErrInvalidSecret that says
// what is wrong (the prefix, the encoding, the length) without repeating
// the key.
func ParseSecret(s string) (Secret, error) {
	if s == "" {
		return Secret{}, fmt.Errorf("%w: empty; want %q followed by base64", ErrInvalidSecret, SecretPrefix)
	}
	if !strings.HasPrefix(s, SecretPrefix) {
		return Secret{}, fmt.Errorf("%w: missing the %q prefix", ErrInvalidSecret, SecretPrefix)
	}
	enc := strings.TrimPrefix(s, SecretPrefix)
	if enc == "" {
		return Secret{}, fmt.Errorf("%w: no key after the %q prefix", ErrInvalidSecret, SecretPrefix)
	}
	if i := strings.IndexFunc(enc, notBase64); i >= 0 {
		return Secret{}, fmt.Errorf("%w: character %d after the prefix is not standard base64 (A-Z a-z 0-9 + / =)", ErrInvalidSecret, i+1)
	}
	var key []byte
	var err error
	if strings.HasSuffix(enc, "=") {
		key, err = base64.StdEncoding.Strict().DecodeString(enc)
	} else {
		key, err = base64.RawStdEncoding.Strict().DecodeString(enc)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("%w: key is not valid base64: %v", ErrInvalidSecret, err)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return Secret{}, fmt.Errorf("%w: key is %d bytes, want %d to %d", ErrInvalidSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return Secret{key: key}, nil
}

// notBase64 reports whether r is outside the standard base64 alphabet
// with its padding character.
func notBase64(r rune) bool {
	return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '+' || r == '/' || r == '=')
}

// Encode returns the text form of s ("whsec_" + standard base64 with
// padding), which ParseSecret reads back. It reveals the key.
func (s Secret) Encode() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// IsZero reports whether s is the zero Secret (no key).
func (s Secret) IsZero() bool { return len(s.key) == 0 }

// String returns a redacted form, "whsec_[redacted]" (or
// "whsec_[none]" for the zero Secret); use Encode for the real text.
func (s Secret) String() string {
	if s.IsZero() {
		return SecretPrefix + "[none]"
	}
	return SecretPrefix + "[redacted]"
}

// GoString is String, so %#v does not reveal the key either.
func (s Secret) GoString() string { return s.String() }

// LogValue implements slog.LogValuer with the redacted String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
