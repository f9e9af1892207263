package event_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
)

// ijsonBad are bodies that break I-JSON (RFC 7493) with what the error
// must say. encoding/json used to repair the first kinds (as U+FFFD) and
// keep the last duplicate.
var ijsonBad = []struct {
	name, body string
	want       []string // fragments of the message
}{
	{"duplicate event_type", `{"event_type":"a","event_type":"b","payload":{}}`, []string{`duplicate member name "event_type"`, "byte 18", "top-level object", "RFC 7493"}},
	{"duplicate in payload", `{"event_type":"a","payload":{"k":1,"k":2}}`, []string{`duplicate member name "k"`, "byte 35", `"/payload"`}},
	{"duplicate deep in payload", `{"event_type":"a","payload":{"a":[{"x":1,"y":2,"x":3}]}}`, []string{`duplicate member name "x"`, `"/payload/a/0"`}},
	{"duplicate after unescaping", `{"event_type":"a","payload":{"\u00e9":1,"é":2}}`, []string{`duplicate member name "é"`}},
	{"invalid UTF-8 in a value", "{\"event_type\":\"a\",\"payload\":{\"s\":\"ab\xffc\"}}", []string{"invalid UTF-8 at byte 36", `"/payload/s"`}},
	{"invalid UTF-8 in a key", "{\"event_type\":\"a\",\"payload\":{\"k\xc3\":1}}", []string{"invalid UTF-8 at byte 31"}},
	{"invalid UTF-8 in event_type", "{\"event_type\":\"\xe2\x82\",\"payload\":{}}", []string{"invalid UTF-8 at byte 15"}},
	{"overlong UTF-8", "{\"event_type\":\"a\",\"payload\":{\"s\":\"\xc0\xaf\"}}", []string{"invalid UTF-8 at byte 34"}},
	{"UTF-8 surrogate bytes", "{\"event_type\":\"a\",\"payload\":{\"s\":\"\xed\xa0\x80\"}}", []string{"invalid UTF-8 at byte 34"}},
	{"lone high surrogate", `{"event_type":"a","payload":{"s":"x\ud800"}}`, []string{`lone surrogate escape \ud800 at byte 35`, `"/payload/s"`}},
	{"lone low surrogate", `{"event_type":"a","payload":{"s":"\udc00"}}`, []string{`lone surrogate escape \udc00 at byte 34`}},
	{"high then non-surrogate", `{"event_type":"a","payload":{"s":"\ud83d\u0041"}}`, []string{`lone surrogate escape \ud83d`}},
	{"reversed pair", `{"event_type":"a","payload":{"s":"\ude00\ud83d"}}`, []string{`lone surrogate escape \ude00`}},
	{"lone surrogate after a pair", `{"event_type":"a","payload":{"s":"\ud83d\ude00\\\ud800"}}`, []string{`lone surrogate escape \ud800 at byte 48`}},
	{"lone surrogate in a key", `{"event_type":"a","payload":{"\udbff":1}}`, []string{`lone surrogate escape \udbff`}},
}

func TestParseCreateRejectsNonIJSON(t *testing.T) {
	for _, tt := range ijsonBad {
		_, err := event.ParseCreate([]byte(tt.body))
		checkIJSONErr(t, "ParseCreate", tt.name, err, tt.want)
	}
	// The same characters, well formed, are accepted and kept.
	req, err := event.ParseCreate([]byte(`{"event_type":"a","payload":{"s":"\ud83d\ude00","t":"😀","u":"\u00e9","k":1,"K":2,"n":{"k":1}}}`))
	if err != nil {
		t.Fatalf("ParseCreate(valid I-JSON) = %v", err)
	}
	if p := eventtest.Decoded(req.Payload); p["s"] != "😀" || p["t"] != "😀" || p["u"] != "é" {
		t.Errorf("ParseCreate payload = %v", req.Payload)
	}
}

func checkIJSONErr(t *testing.T, fn, name string, err error, want []string) {
	t.Helper()
	var ie *event.InputError
	if !errors.As(err, &ie) {
		t.Errorf("%s(%s) = %v, want an invalid_json error", fn, name, err)
		return
	}
	if ie.Code != event.CodeInvalidJSON {
		t.Errorf("%s(%s) code = %s (%s), want %s", fn, name, ie.Code, ie.Message, event.CodeInvalidJSON)
	}
	for _, w := range want {
		if !strings.Contains(ie.Message, w) {
			t.Errorf("%s(%s) message = %q, want it to contain %q", fn, name, ie.Message, w)
		}
	}
}

func TestParseBatchIJSON(t *testing.T) {
	good := `{"event_type":"ok","payload":{"i":1}}`
	for _, tt := range ijsonBad {
		// Inside one entry: that entry's error, the others parse.
		body := `{"events":[` + good + `,` + tt.body + `,` + good + `]}`
		reqs, errs, err := event.ParseBatch([]byte(body))
		if err != nil {
			t.Errorf("ParseBatch(entry %s) whole-body error %v, want a per-entry error", tt.name, err)
			continue
		}
		if len(reqs) != 3 || errs[0] != nil || errs[2] != nil {
			t.Errorf("ParseBatch(entry %s) = %d entries, errors %v", tt.name, len(reqs), errs)
			continue
		}
		// Offsets count from the start of the body.
		want := append([]string(nil), tt.want...)
		for i, w := range want {
			if strings.HasPrefix(w, "byte ") || strings.Contains(w, " at byte ") {
				want[i] = strings.SplitN(w, "byte", 2)[0]
			}
		}
		checkIJSONErr(t, "ParseBatch entry", tt.name, errs[1], want)
	}
	_, errs, err := event.ParseBatch([]byte(`{"events":[{"event_type":"a","event_type":"b","payload":{}}]}`))
	if err != nil || errs[0] == nil || !strings.Contains(errs[0].Error(), "at byte 29") {
		t.Errorf("ParseBatch offset of a duplicate in entry 0: %v, %v; want byte 29 of the body", err, errs)
	}
	// At the top level: the whole body.
	whole := []struct{ name, body, want string }{
		{"duplicate events", `{"events":[` + good + `],"events":[` + good + `]}`, `duplicate member name "events" at byte 50`},
		{"invalid UTF-8 in a member name", "{\"ev\xffents\":[]}", "invalid UTF-8 at byte 4"},
		{"lone surrogate in a member name", `{"\ud800":[]}`, `lone surrogate escape \ud800 at byte 2`},
		{"unknown member", `{"events":[` + good + `],"x":1}`, `unknown field "x"`},
		{"escaped events is events", `{"ev\u0065nts":[` + good + `],"events":[]}`, `duplicate member name "events"`},
		{"trailing value", `{"events":[` + good + `]} {}`, "more than one JSON value"},
		{"trailing garbage", `{"events":[` + good + `]}x`, "more than one JSON value: more data follows at byte 50"},
		{"malformed entry", `{"events":[{"event_type":}]}`, "malformed JSON at byte 25"},
		{"not an object", `[1]`, "must be a JSON object, not array"},
		{"events a number", `{"events":5}`, `field "events" must not be number`},
		{"empty", ``, "the body is empty"},
		{"truncated", `{"events":[{"a":`, "ends in the middle"},
	}
	for _, tt := range whole {
		_, _, err := event.ParseBatch([]byte(tt.body))
		checkIJSONErr(t, "ParseBatch", tt.name, err, []string{tt.want})
	}
	for _, body := range []string{`{}`, `{"events":null}`, `{"events":[]}`} {
		_, _, err := event.ParseBatch([]byte(body))
		var ie *event.InputError
		if !errors.As(err, &ie) || ie.Code != event.CodeInvalidBatch {
			t.Errorf("ParseBatch(%s) = %v, want %s", body, err, event.CodeInvalidBatch)
		}
	}
}

func TestParseStatusAndAckIJSON(t *testing.T) {
	status := []struct{ name, body, want string }{
		{"duplicate status", `{"status":"delivered","status":"failed"}`, `duplicate member name "status" at byte 22`},
		{"invalid UTF-8", "{\"status\":\"deliv\xffered\"}", "invalid UTF-8 at byte 16"},
		{"lone surrogate", `{"status":"\ud800delivered"}`, `lone surrogate escape \ud800 at byte 11`},
	}
	for _, tt := range status {
		_, err := event.ParseStatus([]byte(tt.body))
		checkIJSONErr(t, "ParseStatus", tt.name, err, []string{tt.want})
	}
	ack := []struct{ name, body, want string }{
		{"duplicate event_ids", `{"event_ids":["a"],"event_ids":["b"]}`, `duplicate member name "event_ids"`},
		{"invalid UTF-8 id", "{\"event_ids\":[\"a\xff\"]}", "invalid UTF-8 at byte 16"},
		{"lone surrogate id", `{"event_ids":["\udfff"]}`, `lone surrogate escape \udfff at byte 15`},
	}
	for _, tt := range ack {
		_, err := event.ParseAck([]byte(tt.body))
		checkIJSONErr(t, "ParseAck", tt.name, err, []string{tt.want})
	}
	// What encoding/json decided before still holds.
	for _, tt := range []struct{ body, want string }{
		{`{"status":"delivered","x":1}`, `unknown field "x"`},
		{`{"status":"delivered"} {}`, "more than one JSON value"},
		{`{"status":1}`, `field "status" must not be number`},
		{`{"status":`, "ends in the middle"},
		{` `, "the body is empty"},
		{`{"status" "x"}`, "malformed JSON at byte 10"},
	} {
		_, err := event.ParseStatus([]byte(tt.body))
		checkIJSONErr(t, "ParseStatus", tt.body, err, []string{tt.want})
	}
}

// TestParseRawListQuery: a malformed query string is a 400
// invalid_parameter; url.Values dropped the bad pair silently, so
// cursor=%%% used to read as the first page.
func TestParseRawListQuery(t *testing.T) {
	for _, raw := range []string{"cursor=%%%", "limit=%zz", "limit=10&status=%", "a%2", "limit=10;status=all"} {
		_, err := event.ParseRawListQuery(raw)
		var ie *event.InputError
		if !errors.As(err, &ie) || ie.Code != event.CodeInvalidParameter || !strings.Contains(ie.Message, "malformed") {
			t.Errorf("ParseRawListQuery(%q) = %v, want a malformed-query invalid_parameter", raw, err)
		}
	}
	for _, raw := range []string{"", "limit=10&order=asc", "status=all&event_type=a.b&cursor=abc%2Bdef"} {
		got, err := event.ParseRawListQuery(raw)
		q, _ := url.ParseQuery(raw)
		want, wantErr := event.ParseListQuery(q)
		if err != nil || wantErr != nil || got != want {
			t.Errorf("ParseRawListQuery(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	if p, _ := event.ParseRawListQuery("cursor=abc%2Bdef"); p.Cursor != "abc+def" {
		t.Errorf("cursor = %q, want it unescaped", p.Cursor)
	}
}

// The offsets in these messages are exact: the byte of the trailing data
// after whitespace, of the invalid UTF-8 after multi-byte characters, of
// the lone surrogate after escapes, pairs and the edges of the surrogate
// ranges (U+D7FF, U+E000 are not surrogates; U+DBFF, U+DFFF are).
func TestIJSONMessagesExact(t *testing.T) {
	const p = `{"event_type":"x","payload":{"s":"` // the string's content starts at byte 34
	for _, tt := range []struct{ body, want string }{
		{`{"event_type":"x","payload":{}}x`, "the body holds more than one JSON value: more data follows at byte 31"},
		{"{\"event_type\":\"x\",\"payload\":{}}  \n x", "the body holds more than one JSON value: more data follows at byte 35"},
		{p + "ab\xff\"}}", `invalid UTF-8 at byte 36 (in "/payload/s"): request bodies are I-JSON (RFC 7493) and must be UTF-8`},
		{p + "é👋\xffz\"}}", `invalid UTF-8 at byte 40 (in "/payload/s"): request bodies are I-JSON (RFC 7493) and must be UTF-8`},
		{p + `\n\ud83d\ude00\u0041\ud800x"}}`, `lone surrogate escape \ud800 at byte 54 (in "/payload/s")`},
		{p + `\ud800\u0041"}}`, `lone surrogate escape \ud800 at byte 34 (in "/payload/s")`},
		{p + `\\ud800\udc00x"}}`, `lone surrogate escape \udc00 at byte 41 (in "/payload/s")`},
		{p + `\ud83d\ude00\udfff"}}`, `lone surrogate escape \udfff at byte 46 (in "/payload/s")`},
		{p + `\ud7ff\ue000\udbff"}}`, `lone surrogate escape \udbff at byte 46 (in "/payload/s")`},
		{p + `\udc00\udc00"}}`, `lone surrogate escape \udc00 at byte 34 (in "/payload/s")`},
		{p + `\ud800\ue000"}}`, `lone surrogate escape \ud800 at byte 34 (in "/payload/s")`},
	} {
		_, err := event.ParseCreate([]byte(tt.body))
		var ie *event.InputError
		if !errors.As(err, &ie) || ie.Code != event.CodeInvalidJSON || !strings.HasPrefix(ie.Message, tt.want) {
			t.Errorf("ParseCreate(%q) = %v, want invalid_json %q", tt.body, err, tt.want)
		}
	}
}
