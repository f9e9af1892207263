package event_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

func TestSubscriptionMatches(t *testing.T) {
	assert.True(t, event.Subscription{}.Matches("any.type"), "no event types: every type")
	s := event.Subscription{EventTypes: []string{"a", "b"}}
	assert.True(t, s.Matches("b"))
	assert.False(t, s.Matches("c"))
}

// Each previous secret signs only while its rotation's overlap lasts; one
// without an overlap end never does.
func TestSigningSecrets(t *testing.T) {
	until := time.Unix(1_900_000_000, 0)
	s := event.Subscription{Secrets: []string{"new", "old", "older"}, PreviousExpires: []time.Time{until.Add(time.Hour), until}}
	assert.Equal(t, []string{"new", "old", "older"}, s.SigningSecrets(until.Add(-time.Second)))
	assert.Equal(t, []string{"new", "old"}, s.SigningSecrets(until), "older's overlap ends at its PreviousExpires")
	assert.Equal(t, []string{"new"}, s.SigningSecrets(until.Add(time.Hour)))
	s.PreviousExpires = []time.Time{until}
	assert.Equal(t, []string{"new", "old"}, s.SigningSecrets(until.Add(-time.Second)), "older has no overlap end")
	assert.Equal(t, []string{"new"}, event.Subscription{Secrets: []string{"new"}, PreviousExpires: []time.Time{until}}.SigningSecrets(until.Add(-time.Hour)))
	assert.Empty(t, event.Subscription{}.SigningSecrets(until))
	signing := s.SigningSecrets(until.Add(-time.Second))
	_ = append(signing, "x")
	assert.Equal(t, []string{"new", "old", "older"}, s.Secrets, "appending to the answer leaves the subscription alone")
}

// ParseSubscription: each rule at its boundary, with the message the API
// answers.
func TestParseSubscription(t *testing.T) {
	ok := func(body string) event.SubscriptionRequest {
		t.Helper()
		req, err := event.ParseSubscription([]byte(body))
		require.NoError(t, err, body)
		return req
	}
	bad := func(body, code, msg string) {
		t.Helper()
		_, err := event.ParseSubscription([]byte(body))
		var ie *event.InputError
		if assert.ErrorAs(t, err, &ie, body) {
			assert.Equal(t, code, ie.Code, body)
			assert.Equal(t, msg, ie.Message, body)
		}
	}
	req := ok(`{"url":"https://hooks.example.com/x?y=1","event_types":["a","b","a"],"description":"d"}`)
	assert.Equal(t, event.SubscriptionRequest{URL: "https://hooks.example.com/x?y=1", EventTypes: []string{"a", "b"}, Description: "d"}, req)
	assert.Equal(t, event.SubscriptionRequest{URL: "https://h.example"}, ok(`{"url":"https://h.example"}`))
	// The scheme is case-insensitive and comes back lowercase; nothing
	// else is respelled.
	assert.Equal(t, "https://H.example/P?Q=1", ok(`{"url":"HTTPS://H.example/P?Q=1"}`).URL)
	assert.Equal(t, "https://h.example/", ok(`{"url":"hTtPs://h.example/"}`).URL)

	bad(`{}`, event.CodeInvalidSubscription, `url is missing: send {"url": "https://example.com/webhooks"}`)
	long := "https://h.example/" + strings.Repeat("p", event.MaxTargetURL-len("https://h.example/"))
	assert.Equal(t, long, ok(`{"url":"`+long+`"}`).URL)
	bad(`{"url":"`+long+`p"}`, event.CodeInvalidTarget, fmt.Sprintf("url is %d bytes: at most %d", event.MaxTargetURL+1, event.MaxTargetURL))
	bad(`{"url":"https://h.example/%zz"}`, event.CodeInvalidTarget, `url does not parse (invalid URL escape "%zz"): send an absolute https URL`)
	bad(`{"url":"http://h.example/"}`, event.CodeInvalidTarget, `url scheme "http" is not allowed: webhook targets must be https`)
	bad(`{"url":"https:///path"}`, event.CodeInvalidTarget, `url has no host: send an absolute https URL, such as https://hooks.example.com/triggers`)
	bad(`{"url":"https://:443/path"}`, event.CodeInvalidTarget, `url has no host: send an absolute https URL, such as https://hooks.example.com/triggers`)
	// Credentials in a URL refused for another reason never come back in
	// the error (it reaches the response and the request log). Found by
	// review: both messages repeated the URL.
	for _, raw := range []string{"https://bob:hunter2@/hook", "https://bob:hunt{er2@example.com/hook", "https://bob:hunter2@:443/hook", "https://h.example/%zz?token=hunter2"} {
		_, err := event.ParseSubscription([]byte(`{"url":"` + raw + `"}`))
		if assert.Error(t, err, raw) {
			assert.NotContains(t, err.Error(), "hunter2", raw)
			assert.NotContains(t, err.Error(), "hunt{er2", raw)
		}
	}
	bad(`{"url":"https://u:p@h.example/"}`, event.CodeInvalidTarget, "url must not carry user information: put credentials in a header on your side, or a token in the path")
	bad(`{"url":"https://h.example/x "}`, event.CodeInvalidTarget, `url holds ' ' at byte 19, which a URL may not hold (RFC 3986): percent-encode it (a space is %20)`)
	bad(`{"url":"https://h.example/x?a=%4"}`, event.CodeInvalidTarget, `url holds a '%' without two hex digits after it at byte 22: write a '%' itself as %25`)
	bad(`{"url":"https://h.example/\u00e9"}`, event.CodeInvalidTarget, `url holds "é" at byte 18, outside ASCII: percent-encode its UTF-8 bytes in the path or query, and write a host name in its punycode (xn--) form`)
	assert.Equal(t, "https://h.example/a%20b?q=%7B%7D&l[]=1", ok(`{"url":"https://h.example/a%20b?q=%7B%7D&l[]=1"}`).URL)
	bad(`{"url":"https://h.example/#frag"}`, event.CodeInvalidTarget, "url must not have a fragment (#...)")
	bad(`{"url":"https://h.example/#"}`, event.CodeInvalidTarget, "url must not have a fragment (#...)")

	types := make([]string, event.MaxSubscriptionEventTypes)
	for i := range types {
		types[i] = fmt.Sprintf(`"t%d"`, i)
	}
	assert.Len(t, ok(`{"url":"https://h.example","event_types":[`+strings.Join(types, ",")+`]}`).EventTypes, event.MaxSubscriptionEventTypes)
	bad(`{"url":"https://h.example","event_types":[`+strings.Join(types, ",")+`,"x"]}`, event.CodeInvalidSubscription,
		fmt.Sprintf("event_types has %d entries: at most %d (omit it for every type)", event.MaxSubscriptionEventTypes+1, event.MaxSubscriptionEventTypes))
	bad(`{"url":"https://h.example","event_types":["ok","-bad"]}`, event.CodeInvalidSubscription,
		`event_types[1] "-bad" is not an event type: use 1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit`)
	assert.Nil(t, ok(`{"url":"https://h.example","event_types":[]}`).EventTypes, "an empty list means every type")

	desc := strings.Repeat("é", event.MaxDescription)
	assert.Equal(t, desc, ok(`{"url":"https://h.example","description":"`+desc+`"}`).Description)
	bad(`{"url":"https://h.example","description":"`+desc+`e"}`, event.CodeInvalidSubscription,
		fmt.Sprintf("description is %d characters: at most %d", event.MaxDescription+1, event.MaxDescription))
	_, err := event.ParseSubscription([]byte(`{"url":"https://h.example","URL":"x"}`))
	assert.Error(t, err, "unknown field")
}

// A create's field given as null is an invalid_subscription naming it, as
// a PATCH's is: {"event_types": null} was taken for every type and
// {"description": null} for none, though the API refuses a null field.
// A null among event_types names its entry: it was reported as the event
// type "" (found by review). Both hold for a PATCH's event_types too.
func TestParseSubscriptionRefusesNulls(t *testing.T) {
	for _, c := range []struct{ body, msg string }{
		{`{"url":null}`, `url is null: send the target as a string: {"url": "https://example.com/webhooks"}`},
		{`{"url":"https://h.example","event_types":null}`, "event_types is null: leave it out (or send []) for every event type, or send a list of event types"},
		{`{"url":"https://h.example","description":null}`, "description is null: leave it out for none, or send a string"},
		{`{"url":"https://h.example","description" : null ,"event_types":["a"]}`, "description is null: leave it out for none, or send a string"},
		{`{"url":"https://h.example","event_types":[null]}`, "event_types[0] is null: send each event type as a string"},
		{`{"url":"https://h.example","event_types":["a",null,"b"]}`, "event_types[1] is null: send each event type as a string"},
	} {
		_, err := event.ParseSubscription([]byte(c.body))
		var ie *event.InputError
		if assert.ErrorAs(t, err, &ie, c.body) {
			assert.Equal(t, event.CodeInvalidSubscription, ie.Code, c.body)
			assert.Equal(t, c.msg, ie.Message, c.body)
		}
	}
	_, err := event.ParseSubscriptionPatch([]byte(`{"event_types":["a",null]}`))
	var ie *event.InputError
	if assert.ErrorAs(t, err, &ie) {
		assert.Equal(t, event.CodeInvalidSubscription, ie.Code)
		assert.Equal(t, "event_types[1] is null: send each event type as a string", ie.Message)
	}
	// A PATCH still refuses a null field and an empty patch as before.
	_, err = event.ParseSubscriptionPatch([]byte(`{"disabled":null}`))
	assert.ErrorContains(t, err, "disabled is null: leave a field out to keep it")
	_, err = event.ParseSubscriptionPatch([]byte(` { } `))
	assert.ErrorContains(t, err, "the patch is empty")
}

// A description is one line of text: a control character (C0, DEL or C1)
// is an invalid_subscription naming it and its place, on create and on
// PATCH; every other character, invisible or not, is kept as sent.
func TestSubscriptionDescriptionControlCharacters(t *testing.T) {
	for _, c := range []struct {
		json string // the description as JSON string content
		r    rune
		at   int
	}{
		{`\u0000`, 0x00, 1}, {`a\tb`, '\t', 2}, {`line\nbreak`, '\n', 5}, {`\r`, '\r', 1},
		{`\u001b[31mred`, 0x1b, 1}, {`x\u007f`, 0x7f, 2}, {`\u0080`, 0x80, 1}, {`é\u0085`, 0x85, 2},
		{`\u009f`, 0x9f, 1}, {`ok\u001f`, 0x1f, 3},
	} {
		want := fmt.Sprintf("description holds the control character %U at character %d: send one line of text, without tabs, line breaks or other control characters", c.r, c.at)
		descriptionRefused(t, c.json, want)
	}
	// Kept: letters, emoji, the no-break space U+00A0 and U+00A1 just
	// past the C1 range (the other invisible characters:
	// TestSubscriptionDescriptionInvisibleCharacters).
	for _, keep := range []string{"Billing é 日本 😀", "\u00a0", "\u00a1", "~"} {
		req, err := event.ParseSubscription([]byte(`{"url":"https://h.example","description":"` + keep + `"}`))
		require.NoError(t, err, keep)
		p, err := event.ParseSubscriptionPatch([]byte(`{"description":"` + keep + `"}`))
		require.NoError(t, err, keep)
		require.NotNil(t, p.Description)
		assert.Equal(t, req.Description, *p.Description, keep)
		assert.NotEmpty(t, req.Description, keep)
	}
}

// A description holding a bidirectional control (they reorder what a
// listing shows: "Trojan Source", CVE-2021-42574), a line or paragraph
// separator or another invisible format character is refused on create
// and on patch, naming the class, the code point and its place (found by
// review: each was stored as sent). Text in any script passes, with the
// zero-width joiner and non-joiner it needs, and emoji sequences.
func TestSubscriptionDescriptionInvisibleCharacters(t *testing.T) {
	const advice = ": send one line of visible text, without bidirectional controls, line or paragraph separators or invisible format characters (the zero-width joiner U+200D and non-joiner U+200C are kept)"
	for _, c := range []struct {
		json  string // the description as JSON string content
		class string
		r     rune
		at    int
	}{
		{`a\u202ab`, "bidirectional control character", 0x202A, 2}, {`\u202b`, "bidirectional control character", 0x202B, 1},
		{`\u202c`, "bidirectional control character", 0x202C, 1}, {`\u202d`, "bidirectional control character", 0x202D, 1},
		{`access level: user\u202e \u2066// admin\u2069\u2066`, "bidirectional control character", 0x202E, 19},
		{`\u2066`, "bidirectional control character", 0x2066, 1}, {`\u2067`, "bidirectional control character", 0x2067, 1},
		{`\u2068`, "bidirectional control character", 0x2068, 1}, {`x\u2069`, "bidirectional control character", 0x2069, 2},
		{`\u061c`, "bidirectional control character", 0x061C, 1}, {`\u200e`, "bidirectional control character", 0x200E, 1},
		{`שלום\u200f`, "bidirectional control character", 0x200F, 5},
		{`one\u2028two`, "line or paragraph separator", 0x2028, 4}, {`\u2029`, "line or paragraph separator", 0x2029, 1},
		{`pay\u200bments`, "invisible format character", 0x200B, 4}, {`\u2060`, "invisible format character", 0x2060, 1},
		{`\ufeffbilling`, "invisible format character", 0xFEFF, 1}, {`bill\u00ading`, "invisible format character", 0x00AD, 5},
		{`\u2063`, "invisible format character", 0x2063, 1}, {`\ufff9`, "invisible format character", 0xFFF9, 1},
		{`ok\udb40\udc41`, "invisible format character", 0xE0041, 3}, {`\udb40\udc01`, "invisible format character", 0xE0001, 1},
	} {
		want := fmt.Sprintf("description holds the %s %U at character %d", c.class, c.r, c.at) + advice
		descriptionRefused(t, c.json, want)
	}
	for _, keep := range []string{
		"مرحبا بالعالم",                      // Arabic
		"שלום עולם",                          // Hebrew
		"עברית and English, 123",             // mixed directions, no control
		"क्\u200dष मराठी",                    // Devanagari with a ZWJ
		"می\u200cخواهم",                      // Persian with a ZWNJ
		"👨\u200d👩\u200d👧\u200d👦",             // an emoji family sequence
		"🏳\ufe0f\u200d🌈 1\ufe0f\u20e3 🇫🇷 👍🏽", // variation selectors, a keycap, a flag, a skin tone
		"\u0600\u0661\u0662",                 // the Arabic number sign before digits
		"ᠮᠣᠩᠭᠣᠯ\u180eᠠ",                      // Mongolian with its vowel separator
		"日本語 한국어 ไทย Ελληνικά",
	} {
		req, err := event.ParseSubscription([]byte(`{"url":"https://h.example","description":"` + keep + `"}`))
		if assert.NoError(t, err, "create %+q", keep) {
			assert.Equal(t, keep, req.Description, "kept as sent")
		}
		p, err := event.ParseSubscriptionPatch([]byte(`{"description":"` + keep + `"}`))
		if assert.NoError(t, err, "patch %+q", keep) && assert.NotNil(t, p.Description) {
			assert.Equal(t, keep, *p.Description, "kept as sent")
		}
	}
}

// Subscription ids: "sub_" and 26 characters of [a-z2-7], from 128 random
// bits; anything else is not an id.
func TestSubscriptionIDs(t *testing.T) {
	id, err := event.NewSubscriptionID(bytes.NewReader(make([]byte, 16)))
	require.NoError(t, err)
	assert.Equal(t, "sub_"+strings.Repeat("a", 26), id)
	id, err = event.NewSubscriptionID(bytes.NewReader(bytes.Repeat([]byte{0xff}, 16)))
	require.NoError(t, err)
	assert.Equal(t, "sub_"+strings.Repeat("7", 25)+"4", id)
	assert.True(t, event.ValidSubscriptionID(id))
	random, err := event.NewSubscriptionID(nil)
	require.NoError(t, err)
	assert.True(t, event.ValidSubscriptionID(random), random)
	_, err = event.NewSubscriptionID(iotest.ErrReader(errors.New("no entropy")))
	assert.EqualError(t, err, "no entropy")

	valid := "sub_" + strings.Repeat("a", 26)
	assert.True(t, event.ValidSubscriptionID(valid))
	for _, c := range "az27" {
		assert.True(t, event.ValidSubscriptionID(valid[:5]+string(c)+valid[6:]), "%c", c)
	}
	for _, c := range "`{1819A_" {
		assert.False(t, event.ValidSubscriptionID(valid[:5]+string(c)+valid[6:]), "%c", c)
	}
	for _, id := range []string{"", "sub_", valid[:len(valid)-1], valid + "a", "sux_" + valid[4:], "SUB_" + valid[4:]} {
		assert.False(t, event.ValidSubscriptionID(id), "%q", id)
	}
}

// Positions in a subscription's attempts list: the attempt as 3-6 digits,
// or from 1000 as ':' and nine digits.
func TestValidAttemptPosition(t *testing.T) {
	id, _, err := event.NewID(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), nil)
	require.NoError(t, err)
	for p, want := range map[string]bool{
		id + "#001": true, id + "#999": true, id + "#1000": true, id + "#123456": true,
		id + "#:000001000": true, id + "#:999999999": true,
		id + "#000": false, id + "#01": false, id + "#1234567": false, id + "#12a": false,
		id + "#:000000999": false, id + "#:00001000": false, id + "#:0000010000": false, id + "#:00000100a": false, id + "#:": false,
		"x#001": false, id: false,
	} {
		assert.Equal(t, want, event.ValidAttemptPosition(p), p)
	}
}

// descriptionRefused checks that a description (JSON string content) is
// refused on create and on patch, invalid_subscription with message want.
func descriptionRefused(t *testing.T, json, want string) {
	t.Helper()
	_, err := event.ParseSubscription([]byte(`{"url":"https://h.example","description":"` + json + `"}`))
	var ie *event.InputError
	if assert.ErrorAs(t, err, &ie, "create %s", json) {
		assert.Equal(t, event.CodeInvalidSubscription, ie.Code, "create %s", json)
		assert.Equal(t, want, ie.Message, "create %s", json)
	}
	_, err = event.ParseSubscriptionPatch([]byte(`{"description":"` + json + `"}`))
	if assert.ErrorAs(t, err, &ie, "patch %s", json) {
		assert.Equal(t, event.CodeInvalidSubscription, ie.Code, "patch %s", json)
		assert.Equal(t, want, ie.Message, "patch %s", json)
	}
}
