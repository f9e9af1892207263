package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// TestValidatorAgreesWithDynamoDB writes numbers around every boundary of
// event.ValidNumber to DynamoDB Local: each number the validator accepts
// is stored and reads back as the same decimal; each non-zero number it
// rejects for digits or range is rejected by DynamoDB too. Zeros are
// stricter on purpose (0e126 is refused, DynamoDB Local stores it; it
// rejects 0e2147483648, which the validator used to accept).
func TestValidatorAgreesWithDynamoDB(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	d38 := "12345678901234567890123456789012345678"
	numbers := []string{
		"0", "-0", "0.0", "0e125", "0e-130", "0.000e125", "0e126", "0e-131", "0e2147483647", "0e2147483648", "0e-2147483648", "0E+99999999999",
		d38, d38 + "9", "0.000" + d38, "0.000" + d38 + "9", d38 + "000000", "-" + d38 + "9",
		"1e125", "9.9999999999999999999999999999999999999e125", "1e126", "10e125", "0.1e126", "1e2147483647", "1e2147483648",
		"1e-130", "1e-131", "10e-131", "0.1e-129", "0.1e-130", "-1e-131", "1e-2147483648", "1e0000000000000000000000000000000000005",
	}
	for _, s := range numbers {
		validErr := event.ValidNumber(s)
		e := newEvent(t, "t", map[string]any{"n": json.Number(s)})
		putErr := st.Put(ctx, "tenant-a", e)
		switch {
		case validErr == nil && putErr != nil:
			t.Errorf("ValidNumber(%q) accepts it, DynamoDB Local rejects it: %v", s, putErr)
		case validErr == nil:
			got, err := st.Get(ctx, "tenant-a", e.ID)
			require.NoError(t, err)
			assert.True(t, ddbtest.SameJSON(eventtest.Decoded(e.Payload), eventtest.Decoded(got.Payload)), "%s read back as %v", s, eventtest.Decoded(got.Payload)["n"])
		case putErr == nil && !isZero(s):
			t.Errorf("ValidNumber(%q) = %v, but DynamoDB Local stores it", s, validErr)
		case putErr != nil:
			assert.ErrorIs(t, putErr, event.ErrInvalidItem, "Put(%q)", s)
		}
	}
}

func isZero(s string) bool {
	r, ok := new(big.Rat).SetString(s)
	return ok && r.Sign() == 0
}

// TestAcceptedPayloadsRoundTrip is a differential property: every payload
// event.ParseCreate accepts, drawn from a generator that stays near the
// limits (deep nesting, 38-39 digit numbers, exponents at the bounds,
// zeros with exponents, astral and escaped unicode, many keys), is stored
// on DynamoDB Local (Put and PutBatch) and reads back equal, value for
// value, numbers as exact decimals. PROP_CASES and PROP_SEED change the
// number of cases (default 300, 60 with -short) and the seed.
func TestAcceptedPayloadsRoundTrip(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 60
	}
	if v, err := strconv.Atoi(os.Getenv("PROP_CASES")); err == nil && v > 0 {
		cases = v
	}
	seed := uint64(20261122)
	if v, err := strconv.ParseUint(os.Getenv("PROP_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d, %d cases", seed, cases)
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	var accepted, rejected int
	var batch []event.Event
	flush := func() {
		for i, err := range st.PutBatch(ctx, "tenant-b", batch) {
			require.NoError(t, err, "PutBatch entry %d", i)
			got, err := st.Get(ctx, "tenant-b", batch[i].ID)
			require.NoError(t, err)
			if !ddbtest.SameJSON(eventtest.Decoded(batch[i].Payload), eventtest.Decoded(got.Payload)) {
				t.Fatalf("PutBatch: payload read back differs\n sent %v\n got  %v", batch[i].Payload, got.Payload)
			}
		}
		batch = batch[:0]
	}
	for i := 0; i < cases; i++ {
		body := `{"event_type":"prop","payload":` + g.payload() + `}`
		req, err := event.ParseCreate([]byte(body))
		if err != nil {
			var ie *event.InputError
			require.True(t, errors.As(err, &ie), "ParseCreate error %T %v", err, err)
			rejected++
			continue
		}
		accepted++
		e, err := event.New(req, time.Now(), event.DefaultRetention, event.Metadata{SourceIP: "192.0.2.1"})
		require.NoError(t, err)
		if i%3 == 0 {
			batch = append(batch, e)
			if len(batch) == event.MaxBatch {
				flush()
			}
			continue
		}
		require.NoError(t, st.Put(ctx, "tenant-a", e), "Put of an accepted payload (case %d): %.300s", i, body)
		got, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		if !ddbtest.SameJSON(eventtest.Decoded(e.Payload), eventtest.Decoded(got.Payload)) {
			t.Fatalf("case %d: payload read back differs\n body %.500s\n got  %v", i, body, got.Payload)
		}
	}
	flush()
	t.Logf("%d accepted, %d rejected", accepted, rejected)
	assert.Greater(t, accepted, cases/2, "the generator should mostly produce valid payloads")
	assert.Positive(t, rejected, "the generator should also cross the limits")
}

// gen writes random JSON payload text near the validator's limits.
type gen struct {
	r *rand.Rand
}

func (g *gen) payload() string {
	var b strings.Builder
	switch g.r.IntN(10) {
	case 0: // a chain near the depth limit (31 or 32 levels)
		depth := 29 + g.r.IntN(4)
		g.chain(&b, depth)
	case 1: // many keys
		b.WriteByte('{')
		n := 100 + g.r.IntN(900)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote("k" + strconv.Itoa(i)))
			b.WriteByte(':')
			g.scalar(&b)
		}
		b.WriteByte('}')
	default:
		g.object(&b, 1)
	}
	return b.String()
}

// chain writes a value of depth levels (objects and arrays) whose
// innermost value is random.
func (g *gen) chain(b *strings.Builder, depth int) {
	closers := make([]byte, 0, depth)
	for i := 1; i < depth; i++ {
		if g.r.IntN(2) == 0 {
			b.WriteString(`{` + g.key() + `:`)
			closers = append(closers, '}')
		} else {
			b.WriteString(`[`)
			closers = append(closers, ']')
		}
	}
	b.WriteString(`{"leaf":`)
	g.scalar(b)
	b.WriteString(`}`)
	for i := len(closers) - 1; i >= 0; i-- {
		b.WriteByte(closers[i])
	}
}

func (g *gen) object(b *strings.Builder, depth int) {
	b.WriteByte('{')
	n := g.r.IntN(6)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.key())
		b.WriteByte(':')
		g.value(b, depth+1)
	}
	b.WriteByte('}')
}

func (g *gen) value(b *strings.Builder, depth int) {
	if depth > 33 || b.Len() > 100_000 {
		g.scalar(b)
		return
	}
	switch g.r.IntN(8) {
	case 0:
		g.object(b, depth)
	case 1:
		b.WriteByte('[')
		n := g.r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			g.value(b, depth+1)
		}
		b.WriteByte(']')
	default:
		g.scalar(b)
	}
}

func (g *gen) scalar(b *strings.Builder) {
	switch g.r.IntN(7) {
	case 0, 1, 2:
		b.WriteString(g.number())
	case 3, 4:
		b.WriteString(g.str())
	case 5:
		b.WriteString([]string{"true", "false", "null"}[g.r.IntN(3)])
	default:
		b.WriteString(`""`)
	}
}

func (g *gen) digits(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(byte('0' + g.r.IntN(10)))
	}
	return b.String()
}

// number returns a JSON number: mostly valid, often at a boundary.
func (g *gen) number() string {
	sign := ""
	if g.r.IntN(3) == 0 {
		sign = "-"
	}
	nonzero := func(n int) string { return string(byte('1'+g.r.IntN(9))) + g.digits(n-1) }
	switch g.r.IntN(12) {
	case 0: // integers of 1-39 significant digits, maybe trailing zeros
		return sign + nonzero(1+g.r.IntN(39)) + strings.Repeat("0", g.r.IntN(4)*g.r.IntN(20))
	case 1: // decimals with leading zeros
		return sign + "0." + strings.Repeat("0", g.r.IntN(130)) + nonzero(1+g.r.IntN(38))
	case 2: // near the top of the range
		return sign + nonzero(1) + "." + g.digits(g.r.IntN(38)) + "e" + strconv.Itoa(122+g.r.IntN(5))
	case 3: // near the bottom of the range
		return sign + nonzero(1+g.r.IntN(3)) + "E-" + strconv.Itoa(128+g.r.IntN(4))
	case 4: // zeros with exponents at and past the bounds
		e := []int{0, 125, -130, 0, 125, -130, 126, -131, 2147483648}[g.r.IntN(9)]
		return sign + "0" + []string{"", ".0", ".000"}[g.r.IntN(3)] + "e" + strconv.Itoa(e)
	case 5: // exponents with leading zeros and signs
		return sign + nonzero(1+g.r.IntN(5)) + "e+00" + strconv.Itoa(g.r.IntN(120))
	default: // everyday numbers
		return sign + strconv.Itoa(g.r.IntN(1_000_000)) + []string{"", ".5", ".25", ".0"}[g.r.IntN(4)]
	}
}

// str returns a JSON string mixing ASCII, BMP and astral characters, raw
// and escaped (surrogate pairs included), and control escapes.
func (g *gen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	n := g.r.IntN(12)
	if g.r.IntN(20) == 0 {
		n = 2000 + g.r.IntN(3000)
	}
	for i := 0; i < n; i++ {
		switch g.r.IntN(9) {
		case 0:
			b.WriteString("é")
		case 1:
			b.WriteString("漢")
		case 2:
			b.WriteString("👋🏽")
		case 3:
			b.WriteString(`\ud83d\ude00`) // escaped surrogate pair
		case 4:
			fmt.Fprintf(&b, `\u%04x`, 0x20+g.r.IntN(0xd000)) // escaped BMP
		case 5:
			b.WriteString([]string{`\n`, `\t`, `\"`, `\\`, `\/`, `\u0000`, `\u001f`}[g.r.IntN(7)])
		default:
			b.WriteByte(byte('a' + g.r.IntN(26)))
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (g *gen) key() string {
	switch g.r.IntN(60) {
	case 0:
		return `""` // the validator must reject it
	case 1, 2, 3, 4, 5, 6:
		return g.str()
	default:
		return strconv.Quote(string(rune('a' + g.r.IntN(26))))
	}
}
