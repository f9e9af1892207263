package event

// Tests aimed at what the differential seeds do not reach: the reuse of
// pooled scratch and slab chunks, and the number shortcuts.
//
// This is an internal test: white-box access to the pools and slabs. The
// edges held to the reference path are in edges_test.go.

import (
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// payloadBody wraps a payload in a create body.
func payloadBody(payload string) string {
	return `{"event_type":"a","payload":` + payload + `}`
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

// dynamoNumber agrees with ValidNumber on every literal, with or
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
		if got, want := dynamoNumber(lit, exp), ValidNumber(lit) == nil; got != want {
			t.Errorf("dynamoNumber(%q) = %v, ValidNumber says %v", lit, got, want)
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
