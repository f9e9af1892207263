package event_test

// Edges of the decoder and encoder that the differential seeds do not
// reach, each held to the reference path (the reference decoder,
// eventtest.FromAttributeValue, encoding/json): bodies that end inside a
// token, the exact ranges of \u escapes and surrogates, raw bytes around
// 0x20 and 0x80 on both sides of an escape, number spellings and the set
// encoders.

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
)

// jsonRef is encoding/json's encoding of v, HTML escaping as asked,
// without the trailing newline; err is its error.
func jsonRef(v any, escapeHTML bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkBody holds the fast path to the reference decoder for one body
// that is within the fast path's scope: when the reference accepts it, the
// fast path must take it (not hand it back) with the reference's event
// type, attribute values and response bytes; when the reference refuses
// it, the fast path must decline it and ParseCreate must return the
// reference's error.
func checkBody(t *testing.T, body string) {
	t.Helper()
	data := []byte(body)
	want, wantErr := event.ParseCreateReference(data)
	fast, ok := event.ParseFast(data)
	got, gotErr := event.ParseCreate(data)
	if wantErr != nil {
		if ok {
			t.Fatalf("fast path accepted %q, which the reference refuses: %v", body, wantErr)
		}
		var g, w *event.InputError
		if !errors.As(gotErr, &g) || !errors.As(wantErr, &w) || *g != *w {
			t.Fatalf("ParseCreate(%q) error %v, want the reference's %v", body, gotErr, wantErr)
		}
		return
	}
	if !ok {
		t.Fatalf("fast path declined %q, which the reference accepts", body)
	}
	if gotErr != nil || !reflect.DeepEqual(got, fast) {
		t.Fatalf("ParseCreate(%q) = %+v, %v; want the fast path's %+v", body, got, gotErr, fast)
	}
	if fast.EventType != want.EventType || fast.Payload == nil {
		t.Fatalf("fast path of %q: type %q, Payload %v; want type %q and a payload", body, fast.EventType, fast.Payload, want.EventType)
	}
	_, decoded, _ := event.DecodeCreateReference(data)
	if !reflect.DeepEqual(fast.Payload, want.Payload) {
		gotJ, _ := jsonRef(eventtest.Decoded(fast.Payload), false)
		wantJ, _ := jsonRef(decoded, false)
		t.Fatalf("fast path of %q stored\n %s\nwant\n %s", body, gotJ, wantJ)
	}
	for _, esc := range []bool{false, true} {
		wantJ, err := jsonRef(decoded, esc)
		if err != nil {
			t.Fatal(err)
		}
		gotJ, err := fast.Payload.AppendJSON(nil, esc)
		if err != nil || !bytes.Equal(gotJ, wantJ) {
			t.Fatalf("AppendJSON(%v) of %q = %s, %v\nwant %s", esc, body, gotJ, err, wantJ)
		}
	}
}

// payloadBody wraps a payload in a create body.
func payloadBody(payload string) string {
	return `{"event_type":"a","payload":` + payload + `}`
}

// Valid bodies the fast path must take, with the reference's values:
// every printable ASCII byte (space and DEL included) and raw multi-byte
// UTF-8 (a literal U+FFFD too) before and after an escape, strings and
// names that start with an escape, \u escapes using the digits 0 and 9
// and the letters a, f, A and F, the code points just outside the
// surrogate block, surrogate pairs at both ends of their ranges, numbers
// led by every digit, and more array elements than one list chunk holds.
func TestFastPathEdgesValid(t *testing.T) {
	var ascii strings.Builder
	for c := byte(0x20); c < 0x80; c++ {
		if c != '"' && c != '\\' {
			ascii.WriteByte(c)
		}
	}
	raw := ascii.String() + "é€😀\uFFFD"
	zeros := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }
	for _, body := range []string{
		payloadBody(`{"raw":"` + raw + `","escaped":"\n` + raw + `\t` + raw + `"}`),
		payloadBody(`{"\u006bey":"\"quoted\"","k2":"\\","k3":"\/"}`),
		payloadBody(`{"h":"\u0030\u0039\u00a9\u00AF\u00af\u00Af\u00aF\u0041\u0046\u0061\u0066\u000a\u000A"}`),
		payloadBody(`{"below":"\ud7ff","above":"\ue000","top":"\uffff","first":"\ud800\udc00","last":"\udbff\udfff","upper":"\uD800\uDC00\uDBFF\uDFFF","mid":"\udbff\udc00\ud800\udfff"}`),
		payloadBody(`{"n":[0,-0,1,-1,2,3,4,5,6,7,8,9,-9,90,9.5,-9e3,0.9,10,1E+9,1e-9]}`),
		payloadBody(`{"a":` + zeros(40) + `,"b":` + zeros(40) + `,"c":` + zeros(1) + `,"d":` + zeros(63) + `,"e":` + zeros(200) + `}`),
		`{"payload":{"t":true,"f":false,"z":null,"l":[true,false,null]},"event_type":"a.b"}`,
	} {
		checkBody(t, body)
	}
}

// Invalid bodies the fast path must decline, with the reference's error:
// raw bytes that are not UTF-8 (0x80, the first byte past ASCII, and
// 0xff) before and after an escape, control characters after an escape,
// lone or mismatched surrogates at the edges of their ranges, and bodies
// that end inside a literal, a string, an escape or a number.
func TestFastPathEdgesInvalid(t *testing.T) {
	for _, body := range []string{
		payloadBody(`{"s":"a` + "\x80" + `"}`),
		payloadBody(`{"s":"` + "\x80" + `"}`),
		payloadBody(`{"s":"\n` + "\x80" + `"}`),
		payloadBody(`{"s":"\n` + "\xff" + `"}`),
		payloadBody(`{"s":"\n` + "\xc3" + `"}`),
		payloadBody(`{"s":"\n` + "\x1f" + `"}`),
		payloadBody(`{"s":"\n` + "\x00" + `"}`),
		payloadBody(`{"s":"\udc00\udc00"}`),
		payloadBody(`{"s":"\udbff\udfff\udc00"}`),
		payloadBody(`{"s":"\ud800\ue000"}`),
		payloadBody(`{"s":"\ud800\udbff"}`),
		payloadBody(`{"s":"\ud800\u0041"}`),
		payloadBody(`{"s":"\udfff"}`),
		payloadBody(`{"s":"\ud800"}`),
		payloadBody(`{"s":"\u00g0"}`),
		payloadBody(`{"s":"\u00G0"}`),
		payloadBody(`{"s":"\u00:0"}`),
		payloadBody(`{"s":"\u00/0"}`),
		payloadBody(`{"s":"\u00@0"}`),
		payloadBody(`{"s":"\u00` + "`" + `0"}`),
		payloadBody(`{"s":"\x"}`),
	} {
		checkBody(t, body)
	}
	// Truncated bodies: each ends inside a token of the payload.
	for _, tail := range []string{
		`t`, `tr`, `tru`, `true`, `f`, `fals`, `false`, `n`, `nul`, `null`,
		`"`, `"abc`, `"a\n`, `"a\nb`, `"\`, `"a\`, `"\n\`, `"\u`, `"\u1`, `"\u12`, `"\u123`, `"\u1234`,
		`"\n\u12`, `"\ud800`, `"\ud800\`, `"\ud800\u`, `"\ud800\udc`, `"\ud800\udc00`,
		`-`, `1.`, `1e`, `1e+`, `1E-`, `0`, `-0`, `12`, `1.5`, `1e5`,
	} {
		checkBody(t, `{"event_type":"a","payload":{"a":`+tail)
	}
}

// AppendValue writes string and number sets as encoding/json writes the
// arrays eventtest.FromAttributeValue makes of them: elements comma-separated,
// HTML escaping as asked, an empty number as 0; a number set with an
// element that is not a JSON number fails as encoding/json does.
func TestAppendValueSets(t *testing.T) {
	for _, av := range []types.AttributeValue{
		&types.AttributeValueMemberSS{Value: []string{"a"}},
		&types.AttributeValueMemberSS{Value: []string{"a", "<b>&", "\u2028\u2029", "\xff"}},
		&types.AttributeValueMemberSS{},
		&types.AttributeValueMemberNS{Value: []string{"1"}},
		&types.AttributeValueMemberNS{Value: []string{"1", "-2.5e3", "", "0.01"}},
		&types.AttributeValueMemberNS{},
		&types.AttributeValueMemberNS{Value: []string{"1", "1."}},
		&types.AttributeValueMemberNS{Value: []string{"x"}},
		&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberNS{Value: []string{"7", "8"}}, &types.AttributeValueMemberSS{Value: []string{"p", "q"}}}},
	} {
		for _, esc := range []bool{false, true} {
			want, wantErr := jsonRef(eventtest.FromAttributeValue(av), esc)
			got, err := event.AppendValue([]byte("x"), av, esc)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("event.AppendValue(%#v) error %v, encoding/json %v", av, err, wantErr)
			}
			if err == nil && !bytes.Equal(got, append([]byte("x"), want...)) {
				t.Fatalf("event.AppendValue(%#v, %v) = %s, want x%s", av, esc, got, want)
			}
		}
	}
}

// A stored number is written only if it is exactly a JSON number, as
// encoding/json checks a json.Number: spellings cut short after a sign, a
// point or an exponent mark fail, every leading digit is accepted, and
// the empty number is written as 0.
func TestAppendValueNumberSpellings(t *testing.T) {
	for _, n := range []string{
		"", "0", "-0", "1", "9", "-9", "10", "90", "0.5", "9.09", "1e9", "1E+9", "1e-09", "-0.0e0",
		"-", "+", ".", "1.", "-1.", "1e", "1E", "1e+", "1e-", "-e", "01", "-01", "+1", ".5", "1.e5", "1e5x", "0x1", "e5", "1 ", " 1", "NaN",
	} {
		av := &types.AttributeValueMemberN{Value: n}
		want, wantErr := jsonRef(json.Number(n), false)
		got, err := event.AppendValue(nil, av, false)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("event.AppendValue(N %q) error %v, encoding/json %v", n, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("event.AppendValue(N %q) = %s, want %s", n, got, want)
		}
		if err != nil && !errors.Is(err, event.ErrInvalidNumber) {
			t.Fatalf("event.AppendValue(N %q) error %v, want event.ErrInvalidNumber", n, err)
		}
	}
}
