package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers. http.Header stores them in canonical
// form ("Webhook-Id"); header names are case-insensitive on the wire.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SignatureVersion is the identifier of a symmetric (HMAC-SHA256)
// signature in the webhook-signature header.
const SignatureVersion = "v1"

// MaxMsgIDLen bounds the length of a message id (webhook-id).
const MaxMsgIDLen = 256

// DefaultTolerance is how far a webhook-timestamp may be from the
// verifier's clock, in either direction, when Verifier.Tolerance is zero.
const DefaultTolerance = 5 * time.Minute

// Errors of Signature, Sign and Verifier.Verify. Each error returned
// wraps exactly one of them, so callers can tell the cases apart with
// errors.Is.
var (
	// ErrNoSecrets: no secret to sign or verify with, or a zero Secret
	// among them.
	ErrNoSecrets = errors.New("no usable webhook secret")

	// ErrMissingID, ErrMissingTimestamp, ErrMissingSignature: the header
	// is absent or empty.
	ErrMissingID        = errors.New("missing " + HeaderID + " header")
	ErrMissingTimestamp = errors.New("missing " + HeaderTimestamp + " header")
	ErrMissingSignature = errors.New("missing " + HeaderSignature + " header")

	// ErrInvalidID: the message id is repeated, too long, or has a
	// character outside printable ASCII, a space or a "." (the spec
	// forbids "." because it separates the signed fields).
	ErrInvalidID = errors.New("invalid " + HeaderID)
	// ErrInvalidTimestamp: the timestamp is repeated or not a canonical
	// non-negative decimal integer of unix seconds (for Signature: a
	// time before 1970).
	ErrInvalidTimestamp = errors.New("invalid " + HeaderTimestamp)
	// ErrInvalidSignature: the signature header is repeated or holds no
	// well-formed v1 signature (each must be "v1," and the standard
	// base64 of 32 bytes).
	ErrInvalidSignature = errors.New("invalid " + HeaderSignature)

	// ErrTimestampTooOld, ErrTimestampTooNew: the timestamp is further
	// than the tolerance from the verifier's clock.
	ErrTimestampTooOld = errors.New("webhook timestamp too old")
	ErrTimestampTooNew = errors.New("webhook timestamp too new")

	// ErrSignatureMismatch: the header holds well-formed v1 signatures
	// but none matches the body under any of the secrets.
	ErrSignatureMismatch = errors.New("no matching webhook signature")
)

// checkMsgID reports whether id can be a webhook-id: 1 to MaxMsgIDLen
// characters of printable ASCII other than space and ".".
func checkMsgID(id string) error {
	if id == "" {
		return ErrMissingID
	}
	if len(id) > MaxMsgIDLen {
		return fmt.Errorf("%w: %d characters, at most %d allowed", ErrInvalidID, len(id), MaxMsgIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '.' {
			return fmt.Errorf("%w: character %d (%q) is not allowed; use printable ASCII without space or '.'", ErrInvalidID, i+1, c)
		}
	}
	return nil
}

func checkSecrets(secrets []Secret) error {
	if len(secrets) == 0 {
		return ErrNoSecrets
	}
	for i, s := range secrets {
		if s.IsZero() {
			return fmt.Errorf("%w: secret %d of %d is the zero Secret", ErrNoSecrets, i+1, len(secrets))
		}
	}
	return nil
}

// mac returns HMAC-SHA256(key, id + "." + ts + "." + body).
func mac(key []byte, id, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Signature returns the value of the webhook-signature header for a
// message: one "v1,<base64 HMAC-SHA256>" per secret, in the order given,
// separated by single spaces. The signed content is
// msgID + "." + unix seconds of ts + "." + body.
//
// Pass several secrets while rotating: during the overlap window sign
// with both the old and the new secret, so a subscriber that verifies
// with either accepts the message.
//
// msgID must be 1 to MaxMsgIDLen characters of printable ASCII without
// space or "."; ts must not be before 1970.
func Signature(msgID string, ts time.Time, body []byte, secrets ...Secret) (string, error) {
	if err := checkMsgID(msgID); err != nil {
		return "", err
	}
	if ts.Unix() < 0 {
		return "", fmt.Errorf("%w: %s is before 1970", ErrInvalidTimestamp, ts.UTC().Format(time.RFC3339))
	}
	if err := checkSecrets(secrets); err != nil {
		return "", err
	}
	tsText := strconv.FormatInt(ts.Unix(), 10)
	var b strings.Builder
	for i, s := range secrets {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(SignatureVersion)
		b.WriteByte(',')
		b.WriteString(base64.StdEncoding.EncodeToString(mac(s.key, msgID, tsText, body)))
	}
	return b.String(), nil
}

// Sign sets the three Standard Webhooks headers on h for a message:
// webhook-id, webhook-timestamp (unix seconds of ts) and
// webhook-signature (see Signature). On error h is unchanged.
func Sign(h http.Header, msgID string, ts time.Time, body []byte, secrets ...Secret) error {
	sig, err := Signature(msgID, ts, body, secrets...)
	if err != nil {
		return err
	}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

// Verifier checks the Standard Webhooks headers of a received message.
// It is what a subscriber runs; this package's own tests use it to check
// what Send sends.
type Verifier struct {
	// Secrets are the secrets a signature may be made with; a message is
	// authentic when any of its v1 signatures matches any of them (keep
	// the old secret here during a rotation). Required.
	Secrets []Secret

	// Tolerance is how far the webhook-timestamp may be from Now, in
	// either direction, to limit replays. A timestamp exactly Tolerance
	// away is accepted. Default: DefaultTolerance (5 minutes); negative
	// is an error.
	Tolerance time.Duration

	// Now is the verifier's clock. Default: time.Now.
	Now func() time.Time
}

// single returns the only value of header name in h: "" and false when
// it is absent or empty, an error when it is repeated.
func single(h http.Header, name string, repeated error) (string, error) {
	vs := h.Values(name)
	if len(vs) > 1 {
		return "", fmt.Errorf("%w: header given %d times", repeated, len(vs))
	}
	if len(vs) == 0 {
		return "", nil
	}
	return vs[0], nil
}

// parseTimestamp parses a canonical non-negative decimal integer.
func parseTimestamp(s string) (int64, error) {
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%w: %.40q has a leading zero", ErrInvalidTimestamp, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %.40q is not unix seconds (decimal digits only)", ErrInvalidTimestamp, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %.40q is out of range", ErrInvalidTimestamp, s)
	}
	return n, nil
}

// Verify checks that h and body are an authentic, fresh message: the
// three headers are present once each and well-formed, the timestamp is
// within the tolerance of the clock, and at least one v1 signature of the
// webhook-signature header matches body under one of the secrets.
// Signatures of other versions (such as the spec's asymmetric "v1a") and
// malformed entries are skipped. Signatures are compared in constant
// time (hmac.Equal).
//
// The error wraps one of ErrNoSecrets, ErrMissingID, ErrMissingTimestamp,
// ErrMissingSignature, ErrInvalidID, ErrInvalidTimestamp,
// ErrInvalidSignature, ErrTimestampTooOld, ErrTimestampTooNew or
// ErrSignatureMismatch. Malformed or missing headers are reported before
// the timestamp is compared with the clock, and a stale timestamp before
// the signatures are compared.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	if err := checkSecrets(v.Secrets); err != nil {
		return err
	}
	tolerance := v.Tolerance
	if tolerance < 0 {
		return fmt.Errorf("webhook verifier: negative tolerance %s", tolerance)
	}
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	id, err := single(h, HeaderID, ErrInvalidID)
	if err != nil {
		return err
	}
	tsText, err := single(h, HeaderTimestamp, ErrInvalidTimestamp)
	if err != nil {
		return err
	}
	sigs, err := single(h, HeaderSignature, ErrInvalidSignature)
	if err != nil {
		return err
	}
	if id == "" {
		return ErrMissingID
	}
	if tsText == "" {
		return ErrMissingTimestamp
	}
	if sigs == "" {
		return ErrMissingSignature
	}
	if err := checkMsgID(id); err != nil {
		return err
	}
	ts, err := parseTimestamp(tsText)
	if err != nil {
		return err
	}

	// Parse the signatures before looking at the clock, so a malformed
	// header is reported as such whatever the time.
	var candidates [][]byte
	for entry := range strings.SplitSeq(sigs, " ") {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != SignatureVersion {
			continue
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(sig)
		if err != nil || len(raw) != sha256.Size {
			continue
		}
		candidates = append(candidates, raw)
	}
	if len(candidates) == 0 {
		return fmt.Errorf("%w: no well-formed %q signature (want %q followed by the base64 of %d bytes)", ErrInvalidSignature, SignatureVersion, SignatureVersion+",", sha256.Size)
	}

	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t := time.Unix(ts, 0)
	at := now()
	if at.Sub(t) > tolerance {
		return fmt.Errorf("%w: %s is %s before the clock, tolerance %s", ErrTimestampTooOld, tsText, at.Sub(t).Round(time.Second), tolerance)
	}
	if t.Sub(at) > tolerance {
		return fmt.Errorf("%w: %s is %s after the clock, tolerance %s", ErrTimestampTooNew, tsText, t.Sub(at).Round(time.Second), tolerance)
	}

	for _, s := range v.Secrets {
		want := mac(s.key, id, tsText, body)
		for _, c := range candidates {
			if hmac.Equal(c, want) {
				return nil
			}
		}
	}
	return ErrSignatureMismatch
}
