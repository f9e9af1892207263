package avjson

// Tests aimed at the edges of the decoder and encoder that the
// differential seeds do not reach: bodies that end inside a token, the
// exact ranges of \u escapes and surrogates, raw bytes around 0x20 and
// 0x80 on both sides of an escape, number spellings, the set encoders,
// and the reuse of pooled scratch and slab chunks.
//
// This is an internal test (white-box access to the pools and slabs), so
// it cannot import store or item (they import this package): refAttr
// mirrors store.ToAttributeValue, and the reference bytes come from
// encoding/json applied to the Go values item.FromAttributeValue makes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
)

// refAttr is store.ToAttributeValue: what the reference path stores for
// a value event.ParseCreate decoded.
func refAttr(t *testing.T, v any) types.AttributeValue {
	t.Helper()
	switch x := v.(type) {
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}
	case string:
		return &types.AttributeValueMemberS{Value: x}
	case json.Number:
		return &types.AttributeValueMemberN{Value: string(x)}
	case map[string]any:
		m := make(map[string]types.AttributeValue, len(x))
		for k, e := range x {
			m[k] = refAttr(t, e)
		}
		return &types.AttributeValueMemberM{Value: m}
	case []any:
		l := make([]types.AttributeValue, len(x))
		for i, e := range x {
			l[i] = refAttr(t, e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	t.Fatalf("reference decoded a %T", v)
	return nil
}

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

// checkBody holds the fast path to event.ParseCreate for one body that is
// within the fast path's scope: when the reference accepts it, the fast
// path must take it (not hand it back) with the reference's event type,
// stored attribute values and response bytes; when the reference refuses
// it, the fast path must decline it and ParseCreate must return the
// reference's error.
func checkBody(t *testing.T, body string) {
	t.Helper()
	data := []byte(body)
	want, wantErr := event.ParseCreate(data)
	fast, ok := parseFast(data)
	got, gotErr := ParseCreate(data)
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
	if fast.EventType != want.EventType || fast.Payload != nil {
		t.Fatalf("fast path of %q: type %q, Payload %v; want type %q and only Stored", body, fast.EventType, fast.Payload, want.EventType)
	}
	stored, isPayload := fast.Stored.(Payload)
	if !isPayload {
		t.Fatalf("fast path of %q stored a %T", body, fast.Stored)
	}
	wantAV := refAttr(t, want.Payload).(*types.AttributeValueMemberM).Value
	if !reflect.DeepEqual(map[string]types.AttributeValue(stored), wantAV) {
		gotJ, _ := jsonRef(fromAV(&types.AttributeValueMemberM{Value: stored}), false)
		wantJ, _ := jsonRef(want.Payload, false)
		t.Fatalf("fast path of %q stored\n %s\nwant\n %s", body, gotJ, wantJ)
	}
	for _, esc := range []bool{false, true} {
		wantJ, err := jsonRef(want.Payload, esc)
		if err != nil {
			t.Fatal(err)
		}
		gotJ, err := stored.AppendJSON(nil, esc)
		if err != nil || !bytes.Equal(gotJ, wantJ) {
			t.Fatalf("AppendJSON(%v) of %q = %s, %v\nwant %s", esc, body, gotJ, err, wantJ)
		}
	}
}

// fromAV is item.FromAttributeValue, for failure messages and the
// encoder's reference bytes.
func fromAV(av types.AttributeValue) any {
	switch x := av.(type) {
	case *types.AttributeValueMemberBOOL:
		return x.Value
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return json.Number(x.Value)
	case *types.AttributeValueMemberM:
		m := make(map[string]any, len(x.Value))
		for k, e := range x.Value {
			m[k] = fromAV(e)
		}
		return m
	case *types.AttributeValueMemberL:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = fromAV(e)
		}
		return l
	case *types.AttributeValueMemberSS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = e
		}
		return l
	case *types.AttributeValueMemberNS:
		l := make([]any, len(x.Value))
		for i, e := range x.Value {
			l[i] = json.Number(e)
		}
		return l
	}
	return nil
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
// arrays item.FromAttributeValue makes of them: elements comma-separated,
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
			want, wantErr := jsonRef(fromAV(av), esc)
			got, err := AppendValue([]byte("x"), av, esc)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("AppendValue(%#v) error %v, encoding/json %v", av, err, wantErr)
			}
			if err == nil && !bytes.Equal(got, append([]byte("x"), want...)) {
				t.Fatalf("AppendValue(%#v, %v) = %s, want x%s", av, esc, got, want)
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
		got, err := AppendValue(nil, av, false)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendValue(N %q) error %v, encoding/json %v", n, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("AppendValue(N %q) = %s, want %s", n, got, want)
		}
		if err != nil && !errors.Is(err, errInvalidNumber) {
			t.Fatalf("AppendValue(N %q) error %v, want errInvalidNumber", n, err)
		}
	}
}

// pooled reports whether x comes back out of pool: it takes values out
// until it finds x or has taken more than any test leaves there.
func pooled(pool interface{ Get() any }, x any) bool {
	for range 64 {
		if pool.Get() == x {
			return true
		}
	}
	return false
}

// A parser goes back to the pool after a body unless its scratch is huge:
// up to 4096 keys or array elements and 64 KiB of unescaping buffer are
// kept, one more of any is let go.
func TestParserRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    parser
		keep bool
	}{
		{"empty", parser{}, true},
		{"ordinary", parser{keys: make([]string, 0, 8), vals: make([]types.AttributeValue, 0, 8), elems: make([]types.AttributeValue, 0, 8), buf: make([]byte, 0, 64)}, true},
		{"keys at the limit", parser{keys: make([]string, 0, 4096), vals: make([]types.AttributeValue, 0, 4096)}, true},
		{"elems at the limit", parser{elems: make([]types.AttributeValue, 0, 4096)}, true},
		{"buf at the limit", parser{buf: make([]byte, 0, 64<<10)}, true},
		{"keys past the limit", parser{keys: make([]string, 0, 4097), vals: make([]types.AttributeValue, 0, 4097)}, false},
		{"elems past the limit", parser{elems: make([]types.AttributeValue, 0, 4097)}, false},
		{"buf past the limit", parser{buf: make([]byte, 0, 64<<10+1)}, false},
	} {
		// A Put can land on another P's private slot if the goroutine
		// moves between Put and Get (and the race detector drops some
		// Puts): a kept parser must come back in one of a few tries, a
		// dropped one never.
		back := false
		for range 20 {
			p := new(parser)
			*p = tc.p
			p.s, p.i = "body", 4
			p.release()
			if pooled(&parsers, p) {
				back = true
				if p.s != "" || p.i != 0 || len(p.keys)+len(p.vals)+len(p.elems)+len(p.buf) != 0 {
					t.Fatalf("%s: pooled parser not reset: %+v", tc.name, p)
				}
				break
			}
		}
		if back != tc.keep {
			t.Errorf("%s: back in the pool %v, want %v", tc.name, back, tc.keep)
		}
	}
}

// parseFast itself returns its parser to the pool after an ordinary body.
func TestParseFastReturnsParser(t *testing.T) {
	body := []byte(payloadBody(`{"a":[1,{"b":"c\n"}]}`))
	for range 20 {
		for range 64 {
			parsers.Get() // empty the pool
		}
		if _, ok := parseFast(body); !ok {
			t.Fatal("fast path declined a valid body")
		}
		if p := parsers.Get().(*parser); cap(p.keys) > 0 && cap(p.elems) > 0 && cap(p.buf) > 0 {
			return // the parser that decoded the body, its scratch kept
		}
	}
	t.Fatal("parseFast did not return its parser to the pool")
}

// An encoder goes back to the pool unless its members grew past 4096.
func TestEncoderRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		keep bool
	}{
		{"ordinary", 64, true},
		{"at the limit", 4096, true},
		{"past the limit", 4097, false},
	} {
		back := false
		for range 20 {
			e := &encoder{members: make([]member, 2, tc.n)}
			e.members[0] = member{"k", &types.AttributeValueMemberS{Value: "v"}}
			putEncoder(e)
			if pooled(&encoders, e) {
				back = true
				if len(e.members) != 0 || e.members[:1][0] != (member{}) {
					t.Fatalf("%s: pooled encoder not cleared", tc.name)
				}
				break
			}
		}
		if back != tc.keep {
			t.Errorf("%s: back in the pool %v, want %v", tc.name, back, tc.keep)
		}
	}
}

// Lists are carved one after the other from a shared chunk, each a full
// slice (so an append cannot run into its neighbour); a list that exactly
// fills the rest of the chunk still comes from it, and one that does not
// fit gets a new chunk.
func TestListChunks(t *testing.T) {
	var p parser
	if l := p.list(0); l == nil || len(l) != 0 {
		t.Fatalf("list(0) = %#v, want an empty non-nil slice", l)
	}
	a := p.list(1)
	chunk := p.lists[:cap(p.lists)]
	if len(a) != 1 || cap(a) != 1 || &a[0] != &chunk[0] {
		t.Fatalf("list(1): len %d cap %d, not at the start of the chunk", len(a), cap(a))
	}
	rest := len(chunk) - 1
	b := p.list(rest)
	if len(b) != rest || cap(b) != rest || &b[0] != &chunk[1] {
		t.Fatalf("list(%d) for the rest of the chunk: len %d cap %d, not carved from the chunk", rest, len(b), cap(b))
	}
	c := p.list(1)
	if len(c) != 1 || cap(c) != 1 {
		t.Fatalf("list(1) after a full chunk: len %d cap %d", len(c), cap(c))
	}

	// One more than the rest of the chunk does not fit.
	var q parser
	q.list(1)
	n := cap(q.lists) // cap-1 remain
	d := q.list(n)
	if len(d) != n || cap(d) != n {
		t.Fatalf("list(%d) past the rest of the chunk: len %d cap %d", n, len(d), cap(d))
	}
}

// dynamoNumber agrees with event.ValidNumber on every literal, with or
// without an exponent, around the 38 significant digits DynamoDB keeps
// (signs, points and leading zeros not counted).
func TestDynamoNumber(t *testing.T) {
	d38 := "12345678901234567890123456789012345678"
	for _, lit := range []string{
		"0", "-0", "1", "-1.5", "0.000", d38, "-" + d38, d38[:37] + ".8", "-" + d38[:37] + ".8", "0." + d38,
		d38 + "9", "-" + d38 + "9", d38 + ".9", "-" + d38[:1] + "." + d38[1:] + "9", d38 + "0", "-" + d38 + ".0",
		"0.0000000000000000000000000000000000000000001", "-0." + strings.Repeat("0", 129) + "1", "0." + strings.Repeat("0", 130) + "1",
		"1" + strings.Repeat("0", 125), "1" + strings.Repeat("0", 126),
		"1e5", "1e125", "1e126", "-1E-130", "1e-131", "0e126", d38 + "e0", d38 + "9e-5",
	} {
		end, exp := scanNumber(lit, 0)
		if end != len(lit) {
			t.Fatalf("scanNumber(%q) = %d, want %d", lit, end, len(lit))
		}
		if got, want := dynamoNumber(lit, exp), event.ValidNumber(lit) == nil; got != want {
			t.Errorf("dynamoNumber(%q) = %v, event.ValidNumber says %v", lit, got, want)
		}
	}
}

// A number without an exponent of up to 38 digits is accepted on its
// digit count alone, whatever its sign and point: a long one costs no
// more than a short one (the full DynamoDB check copies the digits of a
// long one).
func TestDynamoNumberShortcut(t *testing.T) {
	long := "-1234567890123456789012345678901234567.8" // 38 digits
	short := "-1.8"
	count := func(lit string) float64 {
		return testing.AllocsPerRun(100, func() {
			if !dynamoNumber(lit, false) {
				t.Fatalf("dynamoNumber(%q) = false", lit)
			}
		})
	}
	if a, b := count(long), count(short); a != b {
		t.Errorf("a 38-digit number costs %v allocations, a short one %v", a, b)
	}
}

// The slabs' first chunks are sized to the body (about one value per 32
// bytes, at least 16): a small body does not allocate room for the
// thousand values a large one may need.
func TestSmallBodySmallChunks(t *testing.T) {
	data := []byte(payloadBody(`{"s":"x","n":1,"t":true,"z":null,"l":[],"m":{}}`))
	parseFast(data) // warm the pool
	const runs = 100
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, ok := parseFast(data); !ok {
			t.Fatal("fast path declined a valid body")
		}
	}
	runtime.ReadMemStats(&after)
	perParse := (after.TotalAlloc - before.TotalAlloc) / runs
	// Six kinds of value, a first chunk of 16 each, are about 2 KB; a
	// chunk of 1024 values would be tens of KB per kind.
	if perParse > 8<<10 {
		t.Errorf("parsing a %d-byte body allocates %d bytes", len(data), perParse)
	}
}
