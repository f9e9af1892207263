package webhook

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The published test vector of the Standard Webhooks reference libraries
// (libraries/python/tests/test_webhooks.py test_sign_function and
// libraries/csharp/.../WebhookTest.cs verifyWebhookSignWorks in
// github.com/standard-webhooks/standard-webhooks).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t testing.TB, s string) Secret {
	t.Helper()
	sec, err := ParseSecret(s)
	require.NoError(t, err)
	return sec
}

// fixedClock returns a clock stopped at unix seconds sec plus d.
func fixedClock(sec int64, d time.Duration) func() time.Time {
	return func() time.Time { return time.Unix(sec, 0).Add(d) }
}

func vectorHeader() http.Header {
	h := http.Header{}
	h.Set(HeaderID, vectorMsgID)
	h.Set(HeaderTimestamp, strconv.Itoa(vectorTimestamp))
	h.Set(HeaderSignature, vectorSignature)
	return h
}

func TestSignatureTestVector(t *testing.T) {
	got, err := Signature(vectorMsgID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), mustSecret(t, vectorSecret))
	require.NoError(t, err)
	assert.Equal(t, vectorSignature, got)

	v := &Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Now: fixedClock(vectorTimestamp, 0)}
	assert.NoError(t, v.Verify(vectorHeader(), []byte(vectorBody)))
}

func TestSignSetsHeaders(t *testing.T) {
	h := http.Header{}
	require.NoError(t, Sign(h, vectorMsgID, time.Unix(vectorTimestamp, 999_000_000), []byte(vectorBody), mustSecret(t, vectorSecret)))
	assert.Equal(t, vectorMsgID, h.Get("Webhook-Id"))
	assert.Equal(t, "1614265330", h.Get("WEBHOOK-TIMESTAMP"))
	assert.Equal(t, vectorSignature, h.Get(HeaderSignature))

	// On error the header is unchanged.
	h2 := http.Header{}
	assert.ErrorIs(t, Sign(h2, "a.b", time.Unix(1, 0), nil, NewSecret()), ErrInvalidID)
	assert.Empty(t, h2)
}

func TestSignatureErrors(t *testing.T) {
	ok := NewSecret()
	tests := []struct {
		name    string
		id      string
		ts      time.Time
		secrets []Secret
		want    error
	}{
		{"empty id", "", time.Unix(1, 0), []Secret{ok}, ErrMissingID},
		{"dot in id", "msg.1", time.Unix(1, 0), []Secret{ok}, ErrInvalidID},
		{"space in id", "msg 1", time.Unix(1, 0), []Secret{ok}, ErrInvalidID},
		{"newline in id", "msg\n1", time.Unix(1, 0), []Secret{ok}, ErrInvalidID},
		{"non-ASCII id", "msgé", time.Unix(1, 0), []Secret{ok}, ErrInvalidID},
		{"long id", strings.Repeat("a", MaxMsgIDLen+1), time.Unix(1, 0), []Secret{ok}, ErrInvalidID},
		{"before 1970", "msg", time.Unix(-1, 0), []Secret{ok}, ErrInvalidTimestamp},
		{"no secrets", "msg", time.Unix(1, 0), nil, ErrNoSecrets},
		{"zero secret", "msg", time.Unix(1, 0), []Secret{ok, {}}, ErrNoSecrets},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Signature(tt.id, tt.ts, []byte("{}"), tt.secrets...)
			assert.ErrorIs(t, err, tt.want, "Signature(%q) = %q, %v", tt.id, got, err)
			assert.Empty(t, got)
		})
	}
	_, err := Signature(strings.Repeat("a", MaxMsgIDLen), time.Unix(0, 0), nil, ok)
	assert.NoError(t, err, "an id of exactly MaxMsgIDLen characters and timestamp 0 are fine")
	_, err = Signature("!msg~", time.Unix(1, 0), nil, ok)
	assert.NoError(t, err, "'!' and '~' are the ends of printable ASCII without space")

	// The messages name the character and the secret, counting from 1.
	_, err = Signature("msg 1", time.Unix(1, 0), nil, ok)
	assert.ErrorContains(t, err, `character 4 (' ') is not allowed`)
	_, err = Signature("msg", time.Unix(1, 0), nil, ok, Secret{})
	assert.ErrorContains(t, err, "secret 2 of 2 is the zero Secret")
}

func TestSignatureRotation(t *testing.T) {
	oldS, newS, other := NewSecret(), NewSecret(), NewSecret()
	body := []byte(`{"a":1}`)
	h := http.Header{}
	require.NoError(t, Sign(h, "msg_1", time.Unix(1700000000, 0), body, oldS, newS))
	parts := strings.Split(h.Get(HeaderSignature), " ")
	require.Len(t, parts, 2, "one signature per secret, space separated: %q", h.Get(HeaderSignature))
	for _, p := range parts {
		assert.True(t, strings.HasPrefix(p, "v1,"), p)
	}
	assert.NotEqual(t, parts[0], parts[1])
	// Each part alone is the signature with that secret, in order.
	one, err := Signature("msg_1", time.Unix(1700000000, 0), body, newS)
	require.NoError(t, err)
	assert.Equal(t, one, parts[1])

	clock := fixedClock(1700000000, 0)
	for name, secrets := range map[string][]Secret{
		"old only":   {oldS},
		"new only":   {newS},
		"other, new": {other, newS},
	} {
		v := &Verifier{Secrets: secrets, Now: clock}
		assert.NoError(t, v.Verify(h, body), name)
	}
	v := &Verifier{Secrets: []Secret{other}, Now: clock}
	assert.ErrorIs(t, v.Verify(h, body), ErrSignatureMismatch)
}

// tamperVerifier accepts any timestamp up to 200 years away, so a changed
// timestamp reaches the signature check.
func tamperVerifier(t *testing.T) *Verifier {
	return &Verifier{
		Secrets:   []Secret{mustSecret(t, vectorSecret)},
		Tolerance: 200 * 365 * 24 * time.Hour,
		Now:       fixedClock(vectorTimestamp, 0),
	}
}

func TestVerifyTamperedBody(t *testing.T) {
	v := tamperVerifier(t)
	body := []byte(vectorBody)
	for i := range body {
		for _, bit := range []byte{0x01, 0x80} {
			b := bytes.Clone(body)
			b[i] ^= bit
			assert.ErrorIs(t, v.Verify(vectorHeader(), b), ErrSignatureMismatch, "body byte %d ^ %#x", i, bit)
		}
	}
	for name, b := range map[string]string{
		"truncated":     vectorBody[:len(vectorBody)-1],
		"appended":      vectorBody + " ",
		"newline added": vectorBody + "\n",
		"empty":         "",
	} {
		assert.ErrorIs(t, v.Verify(vectorHeader(), []byte(b)), ErrSignatureMismatch, name)
	}
}

func TestVerifyTamperedID(t *testing.T) {
	v := tamperVerifier(t)
	for i := range len(vectorMsgID) {
		id := []byte(vectorMsgID)
		if id[i] == 'A' {
			id[i] = 'B'
		} else {
			id[i] = 'A'
		}
		h := vectorHeader()
		h.Set(HeaderID, string(id))
		assert.ErrorIs(t, v.Verify(h, []byte(vectorBody)), ErrSignatureMismatch, "id %q", id)
	}
	h := vectorHeader()
	h.Set(HeaderID, vectorMsgID+"x")
	assert.ErrorIs(t, v.Verify(h, []byte(vectorBody)), ErrSignatureMismatch)
}

func TestVerifyTamperedTimestamp(t *testing.T) {
	v := tamperVerifier(t)
	ts := strconv.Itoa(vectorTimestamp)
	for i := range len(ts) {
		b := []byte(ts)
		b[i] = '0' + (b[i]-'0'+1)%10
		h := vectorHeader()
		h.Set(HeaderTimestamp, string(b))
		err := v.Verify(h, []byte(vectorBody))
		n, _ := strconv.ParseInt(string(b), 10, 64)
		if d := time.Duration(n-vectorTimestamp) * time.Second; d.Abs() > v.Tolerance {
			assert.ErrorIs(t, err, ErrTimestampTooNew, "timestamp %s", b)
			continue
		}
		assert.ErrorIs(t, err, ErrSignatureMismatch, "timestamp %s", b)
	}
	// And with the default tolerance: one second later, in tolerance.
	v = &Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Now: fixedClock(vectorTimestamp, 0)}
	h := vectorHeader()
	h.Set(HeaderTimestamp, strconv.Itoa(vectorTimestamp+1))
	assert.ErrorIs(t, v.Verify(h, []byte(vectorBody)), ErrSignatureMismatch)
}

func TestVerifySignatureHeader(t *testing.T) {
	good := vectorSignature
	sig := strings.TrimPrefix(good, "v1,")
	other, err := Signature(vectorMsgID, time.Unix(vectorTimestamp, 0), []byte(vectorBody), NewSecret())
	require.NoError(t, err)
	tests := []struct {
		name   string
		header string
		want   error // nil: accepted
	}{
		{"the signature", good, nil},
		{"only one of several matches", other + " v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== " + good + " v2," + sig, nil},
		{"match last after malformed entries", "v1, garbage v1,@@@ " + good, nil},
		{"double space", other + "  " + good, nil},
		{"wrong secret", other, ErrSignatureMismatch},
		{"several, none matches", other + " " + other, ErrSignatureMismatch},
		{"truncated by one character", good[:len(good)-1], ErrInvalidSignature},
		{"truncated to half", good[:len(good)/2], ErrInvalidSignature},
		{"padding removed", strings.TrimSuffix(good, "="), ErrInvalidSignature},
		{"only the version", "v1,", ErrInvalidSignature},
		{"no comma", "v1" + sig, ErrInvalidSignature},
		{"version v2", "v2," + sig, ErrInvalidSignature},
		{"version V1", "V1," + sig, ErrInvalidSignature},
		{"version v1a", "v1a," + sig, ErrInvalidSignature},
		{"no version", sig, ErrInvalidSignature},
		{"leading comma", ",v1," + sig, ErrInvalidSignature},
		{"extra byte", "v1," + base64.StdEncoding.EncodeToString(append(mustDecode(t, sig), 0)), ErrInvalidSignature},
		{"URL-safe base64", "v1," + base64.URLEncoding.EncodeToString(mustDecode(t, sig)), ErrInvalidSignature},
	}
	v := &Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Now: fixedClock(vectorTimestamp, 0)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := vectorHeader()
			h.Set(HeaderSignature, tt.header)
			err := v.Verify(h, []byte(vectorBody))
			if tt.want == nil {
				assert.NoError(t, err, "Verify(signature %q)", tt.header)
				return
			}
			assert.ErrorIs(t, err, tt.want, "Verify(signature %q)", tt.header)
		})
	}
}

func mustDecode(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

func TestVerifyHeaders(t *testing.T) {
	tests := []struct {
		name   string
		modify func(h http.Header)
		want   error
	}{
		{"no id", func(h http.Header) { h.Del(HeaderID) }, ErrMissingID},
		{"empty id", func(h http.Header) { h.Set(HeaderID, "") }, ErrMissingID},
		{"no timestamp", func(h http.Header) { h.Del(HeaderTimestamp) }, ErrMissingTimestamp},
		{"empty timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "") }, ErrMissingTimestamp},
		{"no signature", func(h http.Header) { h.Del(HeaderSignature) }, ErrMissingSignature},
		{"empty signature", func(h http.Header) { h.Set(HeaderSignature, "") }, ErrMissingSignature},
		{"no headers at all", func(h http.Header) { clear(h) }, ErrMissingID},
		{"id twice", func(h http.Header) { h.Add(HeaderID, vectorMsgID) }, ErrInvalidID},
		{"timestamp twice", func(h http.Header) { h.Add(HeaderTimestamp, "1614265330") }, ErrInvalidTimestamp},
		{"signature twice", func(h http.Header) { h.Add(HeaderSignature, vectorSignature) }, ErrInvalidSignature},
		{"id with dot", func(h http.Header) { h.Set(HeaderID, "msg.1") }, ErrInvalidID},
		{"id with space", func(h http.Header) { h.Set(HeaderID, "msg 1") }, ErrInvalidID},
		{"timestamp with plus", func(h http.Header) { h.Set(HeaderTimestamp, "+1614265330") }, ErrInvalidTimestamp},
		{"negative timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "-1614265330") }, ErrInvalidTimestamp},
		{"leading zero", func(h http.Header) { h.Set(HeaderTimestamp, "01614265330") }, ErrInvalidTimestamp},
		{"zero", func(h http.Header) { h.Set(HeaderTimestamp, "0") }, ErrTimestampTooOld}, // well-formed: 1970
		{"fraction", func(h http.Header) { h.Set(HeaderTimestamp, "1614265330.5") }, ErrInvalidTimestamp},
		{"milliseconds", func(h http.Header) { h.Set(HeaderTimestamp, "1614265330000") }, ErrTimestampTooNew},
		{"space", func(h http.Header) { h.Set(HeaderTimestamp, " 1614265330") }, ErrInvalidTimestamp},
		{"RFC 3339", func(h http.Header) { h.Set(HeaderTimestamp, "2021-02-25T15:02:10Z") }, ErrInvalidTimestamp},
		{"overflow", func(h http.Header) { h.Set(HeaderTimestamp, "99999999999999999999") }, ErrInvalidTimestamp},
		{"malformed signature wins over stale timestamp", func(h http.Header) {
			h.Set(HeaderTimestamp, "1")
			h.Set(HeaderSignature, "v1,")
		}, ErrInvalidSignature},
	}
	v := &Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Now: fixedClock(vectorTimestamp, 0)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := vectorHeader()
			tt.modify(h)
			err := v.Verify(h, []byte(vectorBody))
			require.ErrorIs(t, err, tt.want)
			for _, other := range allVerifyErrors {
				if other != tt.want {
					assert.NotErrorIs(t, err, other, "errors must be distinct")
				}
			}
		})
	}
}

var allVerifyErrors = []error{
	ErrNoSecrets, ErrMissingID, ErrMissingTimestamp, ErrMissingSignature, ErrInvalidID,
	ErrInvalidTimestamp, ErrInvalidSignature, ErrTimestampTooOld, ErrTimestampTooNew, ErrSignatureMismatch,
}

func TestVerifyTolerance(t *testing.T) {
	tests := []struct {
		name      string
		tolerance time.Duration
		offset    time.Duration // clock minus timestamp
		want      error
	}{
		{"same second", 0, 0, nil},
		{"clock 5 minutes ahead", 0, 5 * time.Minute, nil},
		{"clock 5 minutes and 1 ns ahead", 0, 5*time.Minute + 1, ErrTimestampTooOld},
		{"clock 5 minutes 1 s ahead", 0, 5*time.Minute + time.Second, ErrTimestampTooOld},
		{"clock 5 minutes behind", 0, -5 * time.Minute, nil},
		{"clock 5 minutes 1 s behind", 0, -5*time.Minute - time.Second, ErrTimestampTooNew},
		{"clock a day ahead", 0, 24 * time.Hour, ErrTimestampTooOld},
		{"custom 1 s, 1 s ahead", time.Second, time.Second, nil},
		{"custom 1 s, 2 s ahead", time.Second, 2 * time.Second, ErrTimestampTooOld},
		{"custom 1 h, 59 min behind", time.Hour, -59 * time.Minute, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Tolerance: tt.tolerance, Now: fixedClock(vectorTimestamp, tt.offset)}
			err := v.Verify(vectorHeader(), []byte(vectorBody))
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

func TestVerifyConfig(t *testing.T) {
	h, body := vectorHeader(), []byte(vectorBody)
	assert.ErrorIs(t, (&Verifier{}).Verify(h, body), ErrNoSecrets)
	assert.ErrorIs(t, (&Verifier{Secrets: []Secret{{}}}).Verify(h, body), ErrNoSecrets)
	err := (&Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}, Tolerance: -time.Second}).Verify(h, body)
	assert.ErrorContains(t, err, "negative tolerance")

	// The default clock is time.Now: a fresh signature verifies, the
	// 2021 test vector is too old.
	s := NewSecret()
	fresh := http.Header{}
	require.NoError(t, Sign(fresh, "msg_now", time.Now(), body, s))
	assert.NoError(t, (&Verifier{Secrets: []Secret{s}}).Verify(fresh, body))
	assert.ErrorIs(t, (&Verifier{Secrets: []Secret{mustSecret(t, vectorSecret)}}).Verify(h, body), ErrTimestampTooOld)
}

func TestParseSecret(t *testing.T) {
	key := func(n int) []byte { return bytes.Repeat([]byte{0xA5}, n) }
	std := func(n int) string { return SecretPrefix + base64.StdEncoding.EncodeToString(key(n)) }
	raw := func(n int) string { return SecretPrefix + base64.RawStdEncoding.EncodeToString(key(n)) }
	tests := []struct {
		in      string
		wantLen int    // 0: error
		errHas  string // part of the error message
	}{
		{vectorSecret, 24, ""},
		{std(24), 24, ""},
		{std(32), 32, ""},
		{std(64), 64, ""},
		{std(25), 25, ""}, // padded "=="
		{raw(25), 25, ""}, // same, unpadded
		{std(26), 26, ""},
		{raw(26), 26, ""},
		{std(23), 0, "23 bytes, want 24 to 64"},
		{std(65), 0, "65 bytes, want 24 to 64"},
		{"", 0, "empty"},
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, `missing the "whsec_" prefix`},
		{"WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, `missing the "whsec_" prefix`},
		{"whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, `missing the "whsec_" prefix`},
		{"whsec_", 0, "no key after the"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-w", 0, "character 31 after the prefix is not standard base64"},
		{"whsec_-fKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, "character 1 after the prefix is not standard base64"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ", 0, "character 33 after the prefix"},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La\nLaSw", 0, "character 29 after the prefix"},
		{std(25) + "=", 0, "not valid base64"},
		{SecretPrefix + "=" + base64.StdEncoding.EncodeToString(key(24)), 0, "not valid base64"},
		{SecretPrefix + strings.TrimSuffix(base64.StdEncoding.EncodeToString(key(25)), "="), 0, "not valid base64"}, // one of two padding characters
		{SecretPrefix + base64.RawStdEncoding.EncodeToString(key(25))[:33] + "B", 0, "not valid base64"},            // non-zero trailing bits
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := ParseSecret(tt.in)
			if tt.wantLen == 0 {
				require.ErrorIs(t, err, ErrInvalidSecret, "ParseSecret(%q) = %v, want an error", tt.in, s.Encode())
				assert.Contains(t, err.Error(), tt.errHas)
				assert.True(t, s.IsZero())
				return
			}
			require.NoError(t, err)
			assert.Len(t, s.key, tt.wantLen)
			if tt.in != vectorSecret {
				assert.Equal(t, key(tt.wantLen), s.key)
			}
			// Encode gives the padded form, which parses back to the same key.
			back := mustSecret(t, s.Encode())
			assert.Equal(t, s.key, back.key)
		})
	}
}

// Every character of the standard base64 alphabet is accepted.
func TestParseSecretAlphabet(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	s, err := ParseSecret(SecretPrefix + alphabet)
	require.NoError(t, err)
	assert.Len(t, s.key, 48)
	assert.Equal(t, SecretPrefix+alphabet, s.Encode())
}

func TestParseSecretDoesNotEchoKey(t *testing.T) {
	long := std65()
	_, err := ParseSecret(long)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), long[len(SecretPrefix):len(SecretPrefix)+20])
}

func std65() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("k"), 65))
}

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	assert.Len(t, a.key, 32)
	assert.NotEqual(t, a.key, b.key)
	back, err := ParseSecret(a.Encode())
	require.NoError(t, err)
	assert.Equal(t, a.key, back.key)
	assert.False(t, a.IsZero())
	assert.True(t, Secret{}.IsZero())
}

func TestSecretIsRedacted(t *testing.T) {
	s := mustSecret(t, vectorSecret)
	enc := strings.TrimPrefix(vectorSecret, SecretPrefix)
	type holder struct {
		Name   string
		Secret Secret
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "secret", s, "holder", holder{"n", s})
	for _, out := range []string{
		s.String(),
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s),
		fmt.Sprintf("%v %+v %#v", holder{"n", s}, holder{"n", s}, holder{"n", s}),
		logged.String(),
	} {
		assert.NotContains(t, out, enc)
		assert.NotContains(t, out, string(s.key))
		assert.Contains(t, out, "whsec_[redacted]")
	}
	assert.Equal(t, "whsec_[none]", Secret{}.String())
	assert.Equal(t, vectorSecret, s.Encode())
}
