package event_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
)

// bodySeeds are the seed inputs shared by the fuzz targets; more live in
// testdata/fuzz.
var bodySeeds = eventtest.BodySeeds

// FuzzParseCreate: the single-event body parser never panics; what it
// accepts is a valid event whose payload survives a JSON round trip
// unchanged.
func FuzzParseCreate(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := event.ParseCreate(data)
		if err != nil {
			ie, ok := err.(*event.InputError)
			if !ok {
				t.Fatalf("ParseCreate(%q) error %T %v, want *InputError", data, err, err)
			}
			// A payload refused for its content must break a rule of the
			// reference (decoded by encoding/json, which parses I-JSON
			// the same way when it is valid).
			var b struct {
				Payload any `json:"payload"`
			}
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if ie.Code == event.CodeInvalidPayload && utf8.Valid(data) && dec.Decode(&b) == nil {
				if p, isObject := b.Payload.(map[string]any); isObject {
					if ok, known := refPayload(t, p, 1); known && ok {
						t.Fatalf("ParseCreate(%q) refused a payload the reference accepts: %v", data, err)
					}
				}
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("ParseCreate(%q) accepted invalid UTF-8", data)
		}
		checkRequest(t, data, req)
	})
}

func checkRequest(t *testing.T, data []byte, req event.CreateRequest) {
	t.Helper()
	if !event.ValidEventType(req.EventType) {
		t.Fatalf("ParseCreate(%q) accepted event type %q", data, req.EventType)
	}
	if req.Payload == nil {
		t.Fatalf("ParseCreate(%q) accepted a nil payload", data)
	}
	// Not ValidatePayload: ParseCreate calls it, so that check would be
	// circular. refPayload states the rules independently.
	if ok, known := refPayload(t, eventtest.Decoded(req.Payload), 1); known && !ok {
		t.Fatalf("ParseCreate(%q) accepted a payload the reference refuses", data)
	}
	enc, err := json.Marshal(req.Payload)
	if err != nil {
		t.Fatalf("Marshal of an accepted payload: %v", err)
	}
	again, err := event.ParseCreate([]byte(`{"event_type":"x","payload":` + string(enc) + `}`))
	if err != nil {
		t.Fatalf("re-encoded payload %s rejected: %v", enc, err)
	}
	if !reflect.DeepEqual(again.Payload, req.Payload) {
		t.Fatalf("JSON round trip changed the payload: %v != %v", again.Payload, req.Payload)
	}
}

// FuzzParseBatch: the batch parser never panics, returns one result per
// entry, and each accepted entry is valid.
func FuzzParseBatch(f *testing.F) {
	f.Add([]byte(`{"events":[` + bodySeeds[0] + `,` + bodySeeds[1] + `,` + bodySeeds[2] + `,42]}`))
	f.Add([]byte(`{"events":[]}`))
	f.Add([]byte(`{"events":null}`))
	f.Add([]byte(`{"events":[{}],"x":1}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"events":[{"event_type":"a","payload":{}},{"event_type":"a","event_type":"b","payload":{}}]}`))
	f.Add([]byte(`{"events":[],"events":[]}`))
	f.Add([]byte("{\"events\":[{\"event_type\":\"a\",\"payload\":{\"s\":\"\xff\"}}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, errs, err := event.ParseBatch(data)
		if err != nil {
			return
		}
		if len(reqs) != len(errs) || len(reqs) < 1 || len(reqs) > event.MaxBatch {
			t.Fatalf("ParseBatch(%q): %d requests, %d errors", data, len(reqs), len(errs))
		}
		for i := range reqs {
			if errs[i] == nil {
				checkRequest(t, data, reqs[i])
			}
		}
	})
}

// FuzzParseStatusAndAck: the PATCH and ack body parsers never panic and
// return only valid values.
func FuzzParseStatusAndAck(f *testing.F) {
	for _, s := range []string{`{"status":"delivered"}`, `{"status":"x"}`, `{"event_ids":["a","a","b"]}`, `{"event_ids":[]}`, `{"event_ids":[1]}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, err := event.ParseStatus(data); err == nil && !s.Valid() {
			t.Fatalf("ParseStatus(%q) = %q", data, s)
		}
		ids, err := event.ParseAck(data)
		if err != nil {
			return
		}
		if len(ids) < 1 || len(ids) > event.MaxAck {
			t.Fatalf("ParseAck(%q): %d ids", data, len(ids))
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("ParseAck(%q) kept duplicate %q", data, id)
			}
			seen[id] = true
		}
	})
}

// FuzzParseListQuery: the inbox query parser never panics and returns only
// values in range.
func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=10", "status=all&order=asc", "event_type=user.created&status=failed", "limit=0", "limit=1&limit=2",
		"cursor=abc", "cursor=", "x=1", "status=%ZZ", "order=desc&limit=100", "limit=-5", "limit=99999999999999999999",
		"cursor=%%%", "limit=%zz", "limit=1;order=asc", "limit=%2B5", "limit=05", "limit=0000000000000000000000000005"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := event.ParseRawListQuery(raw)
		if _, perr := url.ParseQuery(raw); perr != nil && err == nil {
			t.Fatalf("ParseRawListQuery(%q) accepted a malformed query", raw)
		}
		if err != nil {
			if _, ok := err.(*event.InputError); !ok {
				t.Fatalf("ParseListQuery(%q) error %T", raw, err)
			}
			return
		}
		if p.Limit < 1 || p.Limit > event.MaxLimit {
			t.Fatalf("ParseListQuery(%q).Limit = %d", raw, p.Limit)
		}
		if q, _ := url.ParseQuery(raw); q.Has("limit") && q.Get("limit") != strconv.Itoa(p.Limit) {
			t.Fatalf("ParseListQuery(%q) took limit %q for %d: only the canonical spelling passes", raw, q.Get("limit"), p.Limit)
		}
		if p.Status != "" && !p.Status.Valid() {
			t.Fatalf("ParseListQuery(%q).Status = %q", raw, p.Status)
		}
		if p.EventType != "" && !event.ValidEventType(p.EventType) {
			t.Fatalf("ParseListQuery(%q).EventType = %q", raw, p.EventType)
		}
		if strings.Contains(p.Shape(), "#") {
			t.Fatalf("shape %q contains #", p.Shape())
		}
	})
}

// FuzzValidNumber: ValidNumber never panics and agrees with exact
// arithmetic (refValid, on math/big) on numbers of moderate exponent.
func FuzzValidNumber(f *testing.F) {
	for _, s := range []string{"0", "-0.0", "1e125", "1e126", "1e-130", "1e-131", "12345678901234567890123456789012345678", "123456789012345678901234567890123456789", "0.1", "9.99e125", "1E+2", "00.5", "-",
		"0e125", "0e126", "0e-130", "0e-131", "0e2147483648", "0.000e-0131"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := event.ValidNumber(s)
		if len(s) > 200 || strings.TrimSpace(s) != s || !json.Valid([]byte(s)) {
			if err == nil && !json.Valid([]byte(s)) {
				t.Fatalf("ValidNumber(%q) accepted a string that is not JSON", s)
			}
			return
		}
		if s[0] != '-' && (s[0] < '0' || s[0] > '9') {
			return // a JSON value, but not a number
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")) > 3 {
			return // exponent too large for big.Rat to be quick
		}
		if want := refValid(t, s); (err == nil) != want {
			t.Fatalf("ValidNumber(%q) = %v, want valid=%v", s, err, want)
		}
	})
}

// FuzzParseID: ParseID never panics; an accepted id is canonical and
// yields a sort key that begins with its own timestamp.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"01a2054b-f8ba-7375-9175-608e01a3eb60", "550e8400-e29b-41d4-a716-446655440000", "", "01A2054B-F8BA-7375-9175-608E01A3EB60", "ffffffff-ffff-7fff-bfff-ffffffffffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := event.ParseID(s)
		if err != nil {
			return
		}
		if s != strings.ToLower(s) || len(s) != 36 {
			t.Fatalf("ParseID accepted non-canonical %q", s)
		}
		sk, err := event.SortKeyForID(s)
		if err != nil || sk != event.FormatTime(ts)+"#"+s {
			t.Fatalf("SortKeyForID(%q) = %q, %v", s, sk, err)
		}
	})
}

// refPayload is the reference rule for a payload value at depth (the
// payload object itself is at depth 1), written from DynamoDB's limits
// rather than from ValidatePayload: containers nest at most
// event.MaxPayloadDepth deep, object keys are never empty, numbers pass
// refValid (math/big). known is false when v holds a number whose
// exponent is too long for big.Rat to check quickly.
func refPayload(t *testing.T, v any, depth int) (ok, known bool) {
	t.Helper()
	ok, known = true, true
	visit := func(e any, d int) {
		if !ok {
			return
		}
		eok, eknown := refPayload(t, e, d)
		ok, known = ok && eok, known && eknown
	}
	switch x := v.(type) {
	case map[string]any:
		if depth > event.MaxPayloadDepth {
			return false, true
		}
		for k, e := range x {
			if len(k) == 0 {
				return false, true
			}
			visit(e, depth+1)
		}
	case []any:
		if depth > event.MaxPayloadDepth {
			return false, true
		}
		for _, e := range x {
			visit(e, depth+1)
		}
	case json.Number:
		s := string(x)
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")) > 3 {
			return true, false
		}
		return refValid(t, s), true
	case string, bool, nil:
	default:
		return false, true
	}
	return ok, known
}
