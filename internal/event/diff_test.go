package event_test

// The differential tests: the fast path of ParseCreate and ParseBatch held
// to the reference decoder (encoding/json into map[string]any, then
// converted), and Payload's JSON held to encoding/json's of the decoded
// payload: the same items, bytes and errors.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

// encodeRef is encoding/json's encoding of v with HTML escaping as asked,
// without the trailing newline.
func encodeRef(t *testing.T, v any, escapeHTML bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("reference encoding of %v: %v", v, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// template is the event both paths build around their payloads: every
// field set, so the whole item and response are compared.
func template(typ string) event.Event {
	return event.Event{
		ID: "01a2054b-f8ba-7375-9175-608e01a3eb60", Type: typ, Status: event.Received,
		Timestamp: "2026-11-22T22:06:34.682885Z", RetryCount: 0, TTL: 1798031571,
		Metadata: event.Metadata{SourceIP: "203.0.113.7", APIVersion: event.APIVersion, CorrelationID: "req-<&>"},
	}
}

// fastPathCount counts the bodies the fast path accepted (for the log of
// TestDifferential).
var fastPathCount int

// checkDifferential holds ParseCreate to the reference decoder for one
// body: what the fast path accepts the reference accepts, with the same
// stored item, the same response bytes (POST, and the inbox's reading of
// the stored item), the same idempotency hash input; everything else gets
// the reference's error.
func checkDifferential(t *testing.T, data []byte) {
	t.Helper()
	old, oldErr := event.ParseCreateReference(data)
	fast, ok := event.ParseFast(data)
	pub, pubErr := event.ParseCreate(data)
	if oldErr == nil {
		// The reference's conversion keeps the decoded payload exactly.
		_, decoded, _ := event.DecodeCreateReference(data)
		if back := eventtest.Decoded(old.Payload); !reflect.DeepEqual(back, decoded) {
			t.Fatalf("reference payload of %q converts to %v, decoded %v", data, back, decoded)
		}
	}
	if !ok {
		if oldErr != nil {
			sameError(t, data, pubErr, oldErr)
			return
		}
		// Declined a body the reference accepts: ParseCreate falls back,
		// which is slower but the reference's result.
		if pubErr != nil || !reflect.DeepEqual(pub, old) {
			t.Fatalf("ParseCreate(%q) = %+v, %v after the fallback, want %+v", data, pub, pubErr, old)
		}
		return
	}
	fastPathCount++
	if oldErr != nil {
		t.Fatalf("fast path accepted %q, which the reference refuses: %v", data, oldErr)
	}
	if pubErr != nil || !reflect.DeepEqual(pub, fast) {
		t.Fatalf("ParseCreate(%q) = %+v, %v, want the fast path's %+v", data, pub, pubErr, fast)
	}
	if fast.Payload == nil {
		t.Fatalf("fast path of %q: nil Payload", data)
	}
	sameRequest(t, data, old, fast)
}

// sameRequest requires the fast path's request to store the reference's
// item and write its bytes.
func sameRequest(t *testing.T, data []byte, old, fast event.CreateRequest) {
	t.Helper()
	if fast.EventType != old.EventType {
		t.Fatalf("fast path of %q: event type %q, want %q", data, fast.EventType, old.EventType)
	}

	// The stored item.
	eOld, eNew := template(old.EventType), template(fast.EventType)
	eOld.Payload, eNew.Payload = old.Payload, fast.Payload
	itOld := item.FromEvent("tenant-a", eOld, schema.ProfileSeed)
	itNew := item.FromEvent("tenant-a", eNew, schema.ProfileSeed)
	if !reflect.DeepEqual(itNew, itOld) {
		t.Fatalf("stored item of %q differs:\n fast %s\n ref  %s", data, dump(itNew), dump(itOld))
	}

	// The 201's body, and the same through MarshalJSON with and without
	// HTML escaping (batch results, json.Marshal), against encoding/json
	// of the payload decoded.
	ref := plainWith(eOld, eventtest.Decoded(old.Payload))
	want := encodeRef(t, ref, false)
	for name, e := range map[string]event.Event{"fast": eNew, "reference": eOld} {
		got, err := e.AppendJSON(nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON of the %s event of %q = %s, %v\nwant %s", name, data, got, err, want)
		}
		for _, esc := range []bool{false, true} {
			if got, want := encodeRef(t, e, esc), encodeRef(t, ref, esc); !bytes.Equal(got, want) {
				t.Fatalf("encoding/json (escapeHTML %v) of the %s event of %q = %s\nwant %s", esc, name, data, got, want)
			}
		}
	}

	// The idempotency hash input: json.Encoder with HTML escaping.
	var h bytes.Buffer
	_ = json.NewEncoder(&h).Encode(ref.Payload)
	hashIn, err := fast.Payload.AppendJSON(nil, true)
	if err != nil || !bytes.Equal(append(hashIn, '\n'), h.Bytes()) {
		t.Fatalf("hash input of %q = %s, %v\nwant %s", data, hashIn, err, h.Bytes())
	}

	// Reading the stored item back: the inbox writes what was posted.
	gotRead, err := item.EventFromItem(itNew).AppendJSON(nil)
	if err != nil || !bytes.Equal(gotRead, want) {
		t.Fatalf("read of the stored item of %q = %s, %v\nwant %s", data, gotRead, err, want)
	}
}

// sameError requires got to be the reference's error for data. The
// reference's payload check walks a Go map, so a payload with several
// problems may be reported by any of them, some with a chance as low as
// 1/8 (the first of 8 slots of a small map): got must be one the
// reference gives in 1000 tries.
func sameError(t *testing.T, data []byte, got, want error) {
	t.Helper()
	var g, w *event.InputError
	if !errors.As(got, &g) || !errors.As(want, &w) {
		t.Fatalf("ParseCreate(%q) error %v (%T), want %v (%T)", data, got, got, want, want)
	}
	if *g == *w {
		return
	}
	for range 1000 {
		_, again := event.ParseCreateReference(data)
		if errors.As(again, &w) && *g == *w {
			return
		}
	}
	t.Fatalf("ParseCreate(%q) error %v, want %v", data, got, want)
}

func dump(it map[string]types.AttributeValue) string {
	b, _ := json.Marshal(eventtest.FromAttributeValue(&types.AttributeValueMemberM{Value: it}))
	return string(b)
}

// diffSeeds are the FuzzParseCreate seeds, and bodies
// aimed at the fast path's own rules: escapes, the characters the
// encoders escape, numbers near every limit, names equal only after
// unescaping, nesting at the limit.
var diffSeeds = append(slices.Clone(eventtest.BodySeeds),
	// Escapes and what the encoders escape.
	` { "payload" : { "b" : "<a href=\"x\">&amp;</a>" , "c":"\u2028\u2029\u0000\u001f\b\f\n\r\t\/\\" } , "event_type" : "a" } `,
	`{"event\u005ftype":"\u0061.b","payload":{"\u00e9":"é","k\u0000":1,"\ud83d\ude00":"\uD83D\uDE00","DEL":"`+"\x7f"+`"}}`,
	`{"event_type":"a","payload":{"é":1,"\u00e9":2}}`,
	`{"event_type":"a","payload":{"s":"\udc00"}}`,
	`{"event_type":"a","payload":{"s":"\ud800\u0041"}}`,
	`{"event_type":"a","payload":{"s":"\u12"}}`,
	`{"event_type":"a","payload":{"s":"tab	in string"}}`,
	"{\"event_type\":\"a\",\"payload\":{\"s\":\"\xed\xa0\x80\",\"t\":\"\xef\xbf\xbe\xef\xbf\xbf\"}}",
	"\xef\xbb\xbf{\"event_type\":\"a\",\"payload\":{}}",
	`{"EVENT_TYPE":"a","payload":{}}`,
	`{"event_type":null,"payload":{}}`,
	`{"event_type":"a","payload":null}`,
	`{"event_type":"a"}`,
	`{"payload":{}}`,
	`{"event_type":1,"payload":{}}`,
	`{"event_type":"","payload":{}}`,
	`{"event_type":"a","payload":{},"payload":{}}`,
	`{"event_type":"a","payload":{}}{}`,
	`{"event_type":"a","payload":{"a":[1,2,]}}`,
	`{"event_type":"a","payload":{"a":tru}}`,
	`{"event_type":"a","payload":{"a":nul}}`,
	`{"event_type":"a","payload":{"a":-}}`,
	`{"event_type":"a","payload":{"a":01}}`,
	`{"event_type":"a","payload":{"a":1.}}`,
	`{"event_type":"a","payload":{"a":.5}}`,
	`{"event_type":"a","payload":{"a":1e}}`,
	`{"event_type":"a","payload":{"a":+1}}`,
	// Numbers at DynamoDB's limits, written in every spelling.
	`{"event_type":"a","payload":{"a":-0,"b":1E+2,"c":1.50,"d":0.000,"e":1e-130,"f":9.9999999999999999999999999999999999999E+125,"g":-1e125}}`,
	`{"event_type":"a","payload":{"a":12345678901234567890123456789012345678,"b":0.0000000000000000000000000000000000001}}`,
	`{"event_type":"a","payload":{"a":123456789012345678901234567890123456789}}`,
	`{"event_type":"a","payload":{"a":1234567890123456789012345678901234567.80}}`,
	`{"event_type":"a","payload":{"a":0.00000000000000000000000000000000000000000000001}}`,
	`{"event_type":"a","payload":{"a":1e-131}}`,
	`{"event_type":"a","payload":{"a":0e126}}`,
	`{"event_type":"a","payload":{"a":[true,false,null,"s",1,{"k":[{}]}]}}`,
	// Nesting: 31 levels are the most, objects and arrays alike.
	`{"event_type":"a","payload":`+strings.Repeat(`{"a":`, 30)+`1`+strings.Repeat(`}`, 30)+`}`,
	`{"event_type":"a","payload":`+strings.Repeat(`{"a":`, 31)+`1`+strings.Repeat(`}`, 31)+`}`,
	`{"event_type":"a","payload":{"a":`+strings.Repeat(`[`, 30)+strings.Repeat(`]`, 30)+`}}`,
	`{"event_type":"a","payload":{"a":`+strings.Repeat(`[`, 31)+strings.Repeat(`]`, 31)+`}}`,
	// Several problems in one payload: the reference reports any.
	`{"event_type":"a","payload":{"x":1e200,"y":{"":1},"z":1e-200}}`,
)

// corpus returns the seeds of FuzzParseCreate's corpus.
func corpus(t testing.TB) [][]byte {
	seeds := fuzzSeeds(t, "FuzzParseCreate")
	if len(seeds) == 0 {
		t.Fatal("no corpus of FuzzParseCreate")
	}
	return seeds
}

// fuzzSeeds returns the []byte inputs of the corpus of fuzz target name (testdata/fuzz/<name>/*, go test's corpus format).
func fuzzSeeds(t testing.TB, name string) [][]byte {
	files, err := filepath.Glob("testdata/fuzz/" + name + "/*")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				s, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				out = append(out, []byte(s))
			}
		}
	}
	return out
}

// allSeeds are the seeds of the differential fuzz target: diffSeeds,
// FuzzParseCreate's corpus and a realistic 1 KB body.
func allSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, s := range diffSeeds {
		out = append(out, []byte(s))
	}
	out = append(out, corpus(t)...)
	return append(out, eventtest.Body(1<<10))
}

// TestDifferential runs every seed through both paths.
func TestDifferential(t *testing.T) {
	fastPathCount = 0
	// And a 64 KB body, too slow to mutate as a fuzz seed.
	seeds := append(allSeeds(t), eventtest.Body(64<<10))
	for _, data := range seeds {
		checkDifferential(t, data)
	}
	t.Logf("%d of %d bodies took the fast path", fastPathCount, len(seeds))
}

// Every body the reference accepts among the seeds takes the fast path,
// so the differential checks above compare the fast path itself.
func TestFastPathTakesEveryValidSeed(t *testing.T) {
	for _, data := range append(allSeeds(t), eventtest.Body(64<<10)) {
		if _, err := event.ParseCreateReference(data); err != nil {
			continue
		}
		if _, ok := event.ParseFast(data); !ok {
			t.Errorf("fast path declined %q, which the reference accepts", data)
		}
	}
}

// FuzzDifferentialCreate: for any body, ParseCreate gives the stored item,
// response bytes and hash input of the reference decoder, or its error.
func FuzzDifferentialCreate(f *testing.F) {
	for _, data := range allSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDifferential(t, data)
	})
}

// checkBatch holds ParseBatch to its reference decoder for one body:
// the same whole-body error, and per entry the same error or a request
// with the same item and bytes.
func checkBatch(t *testing.T, data []byte) {
	t.Helper()
	oldReqs, oldErrs, oldErr := event.ParseBatchReference(data)
	reqs, errs, err := event.ParseBatch(data)
	if (err == nil) != (oldErr == nil) || (err != nil && err.Error() != oldErr.Error()) {
		t.Fatalf("ParseBatch(%q) error %v, want %v", data, err, oldErr)
	}
	if len(reqs) != len(oldReqs) || len(errs) != len(oldErrs) {
		t.Fatalf("ParseBatch(%q): %d requests, %d errors; want %d, %d", data, len(reqs), len(errs), len(oldReqs), len(oldErrs))
	}
	for i := range reqs {
		if oldErrs[i] != nil {
			if errs[i] == nil || errs[i].Error() != oldErrs[i].Error() {
				// The reference's payload check may report any of several
				// problems: the error must be one it gives.
				ok := false
				for range 1000 {
					if _, again, _ := event.ParseBatchReference(data); errs[i] != nil && again[i] != nil && again[i].Error() == errs[i].Error() {
						ok = true
						break
					}
				}
				if !ok {
					t.Fatalf("ParseBatch(%q) entry %d error %v, want %v", data, i, errs[i], oldErrs[i])
				}
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("ParseBatch(%q) entry %d error %v; the reference accepts it", data, i, errs[i])
		}
		sameRequest(t, data, oldReqs[i], reqs[i])
	}
}

// batchSeeds are the differential batch seeds.
var batchSeeds = []string{
	`{"events":[` + diffSeeds[0] + `,` + diffSeeds[1] + `,` + diffSeeds[2] + `,42]}`,
	`{"events":[]}`,
	`{"events":null}`,
	`{"events":[{}],"x":1}`,
	`{}`,
	`{"events":[{"event_type":"a","payload":{}},{"event_type":"a","event_type":"b","payload":{}}]}`,
	`{"events":[],"events":[]}`,
	"{\"events\":[{\"event_type\":\"a\",\"payload\":{\"s\":\"\xff\"}}]}",
}

func allBatchSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, s := range batchSeeds {
		out = append(out, []byte(s))
	}
	// Every body seed as a batch of one, and all of them in batches of
	// up to 25.
	var all []string
	for _, s := range diffSeeds {
		out = append(out, []byte(`{"events":[`+s+`]}`))
		all = append(all, s)
	}
	for len(all) > 0 {
		n := min(len(all), 25)
		out = append(out, []byte(`{"events":[`+strings.Join(all[:n], ",")+`]}`))
		all = all[n:]
	}
	return append(out, fuzzSeeds(t, "FuzzParseBatch")...)
}

func TestBatchDifferential(t *testing.T) {
	for _, data := range allBatchSeeds(t) {
		checkBatch(t, data)
	}
}

// FuzzDifferentialBatch: for any body, ParseBatch gives its reference's
// whole-body error, and per entry its error or the same item and bytes.
func FuzzDifferentialBatch(f *testing.F) {
	for _, data := range allBatchSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkBatch(t, data)
	})
}
