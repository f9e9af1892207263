package event_test

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/internal/event"
)

// nested returns a payload whose innermost container sits at depth levels
// (the payload object is level 1); containers alternate objects and arrays
// when mixed is set.
func nested(levels int, mixed bool) string {
	var open, close strings.Builder
	for i := 1; i < levels; i++ {
		if mixed && i%2 == 1 {
			open.WriteString(`[`)
			close.WriteString(`]`)
		} else {
			open.WriteString(`{"a":`)
			close.WriteString(`}`)
		}
	}
	inner := `{"leaf":1}`
	if levels == 0 {
		inner = ``
	}
	c := close.String()
	rev := make([]byte, len(c))
	for i := range c {
		rev[i] = c[len(c)-1-i]
	}
	return `{"event_type":"x","payload":{"p":` + open.String() + inner + string(rev) + `}}`
}

// TestPayloadLimitBoundaries pins each payload limit on both sides of its
// boundary (DynamoDB Local 3.3.1 agrees: see the store's
// TestValidatorAgreesWithDynamoDB).
func TestPayloadLimitBoundaries(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
	}{
		// The payload is level 1, {"p": ...} holds level 2 and so on.
		{"depth 31 objects", nested(30, false), true},
		{"depth 32 objects", nested(31, false), false},
		{"depth 31 mixed", nested(30, true), true},
		{"depth 32 mixed", nested(31, true), false},
		{"depth 31 empty array", `{"event_type":"x","payload":` + strings.Repeat(`{"a":`, 30) + `[]` + strings.Repeat(`}`, 30) + `}`, true},
		{"depth 32 empty array", `{"event_type":"x","payload":` + strings.Repeat(`{"a":`, 31) + `[]` + strings.Repeat(`}`, 31) + `}`, false},
		{"depth 31 scalar leaf", `{"event_type":"x","payload":` + strings.Repeat(`{"a":`, 31) + `1` + strings.Repeat(`}`, 31) + `}`, true},
		{"empty key", `{"event_type":"x","payload":{"":1}}`, false},
		{"nested empty key", `{"event_type":"x","payload":{"a":[{"":1}]}}`, false},
		{"blank key", `{"event_type":"x","payload":{" ":1}}`, true},
		{"38 digits", `{"event_type":"x","payload":{"n":12345678901234567890123456789012345678}}`, true},
		{"39 digits", `{"event_type":"x","payload":{"n":123456789012345678901234567890123456789}}`, false},
		{"zero 0e2147483648", `{"event_type":"a","payload":{"n":0e2147483648}}`, false},
		{"zero 0e125", `{"event_type":"a","payload":{"n":0e125}}`, true},
	}
	for _, tt := range tests {
		_, err := event.ParseCreate([]byte(tt.body))
		if (err == nil) != tt.ok {
			t.Errorf("%s: ParseCreate(%.80s...) = %v, want ok=%v", tt.name, tt.body, err, tt.ok)
		}
		if err != nil && !tt.ok {
			if ie, isInput := err.(*event.InputError); !isInput || ie.Code != event.CodeInvalidPayload {
				t.Errorf("%s: ParseCreate error %v, want code %s", tt.name, err, event.CodeInvalidPayload)
			}
		}
	}
}

// TestValidNumberBoundaries: significant digits 38/39 and the exponent
// bounds 1E-130 and below 1E+126, in every spelling, and zeros, whose
// exponent must lie in -130..125 (0e2147483648 passed before and DynamoDB
// rejected it: a 500).
func TestValidNumberBoundaries(t *testing.T) {
	d38 := "12345678901234567890123456789012345678"
	valid := []string{
		"0", "-0", "0.0", "0.000", "-0.0e0", "0e0", "0E+0", "0e125", "0E+125", "0e-130", "0.000e125", "0e0000000000000000125", "0e-0000000000130",
		d38, "-" + d38, d38 + "000000", "0.000000" + d38, d38[:1] + "." + d38[1:] + "e87", "1.0000000000000000000000000000000000000000000000",
		"1e125", "9.9999999999999999999999999999999999999e125", "99999999999999999999999999999999999999e88", "0.1e126", "1" + strings.Repeat("0", 125),
		"1e-130", "-1e-130", "10e-131", "0.1e-129", "0.0000000001e-120", "1" + strings.Repeat("0", 100) + "e-230",
		"9.9999999999999999999999999999999999999e-130", "1e0000000000000000000000000000000000005",
	}
	invalid := []string{
		"0e126", "0e-131", "0.000e126", "-0e-131", "0e2147483647", "0e2147483648", "0e-2147483648", "0E+99999999999", "0e-999999999999999999999999999",
		d38 + "9", "1" + d38, "0.000000" + d38 + "9", d38 + "." + "9",
		"1e126", "10e125", "-1e126", "9.99999999999999999999999999999999999999e125", "1" + strings.Repeat("0", 126), "1e2147483647", "1e99999999999999",
		"1e-131", "0.1e-130", "-1e-131", "1e-2147483648", "1e-99999999999999",
		// Not JSON numbers (DynamoDB would take some of them).
		"", "-", "+1", ".5", "1.", "00", "01", "-01.5", "1e", "1e+", "1.e5", "NaN", "Infinity", "0x10", "1_000", " 1", "1 ",
	}
	for _, s := range valid {
		if err := event.ValidNumber(s); err != nil {
			t.Errorf("ValidNumber(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range invalid {
		if err := event.ValidNumber(s); err == nil {
			t.Errorf("ValidNumber(%q) = nil, want an error", s)
		}
	}
}

// TestValidNumberAgreesWithBig compares ValidNumber with an independent
// reference built on math/big over a grid around every boundary:
// mantissas of 1, 38 and 39 significant digits, with leading and trailing
// zeros, times exponents around -130, 125 and 0, and zeros of any exponent.
func TestValidNumberAgreesWithBig(t *testing.T) {
	mantissas := []string{"0", "0.0", "00", "01", "1", "9", "0.1", "0.01", "10", "100", "1.5", "99.99",
		"12345678901234567890123456789012345678", "1234567890123456789012345678901234567.8", "0.0012345678901234567890123456789012345678",
		"123456789012345678901234567890123456789", "1.23456789012345678901234567890123456789", "1234567890123456789012345678901234567800",
		"99999999999999999999999999999999999999", "9.9999999999999999999999999999999999999", "999999999999999999999999999999999999999"}
	var exps []int
	for _, c := range []int{-130, 125, 0, -91, 88, 163, -169} {
		for d := -3; d <= 3; d++ {
			exps = append(exps, c+d)
		}
	}
	n := 0
	for _, m := range mantissas {
		for _, sign := range []string{"", "-"} {
			for _, e := range exps {
				for _, spell := range []string{"e", "E", "e+0"} {
					s := sign + m + spell + strconv.Itoa(e)
					if spell == "e+0" {
						if e < 0 {
							continue
						}
						s = sign + m + "e+0" + strconv.Itoa(e)
					}
					want := refValid(t, s)
					if got := event.ValidNumber(s) == nil; got != want {
						t.Errorf("ValidNumber(%q) valid = %v, math/big reference says %v", s, got, want)
					}
					n++
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases", n)
	}
}

// refValid is the rule computed with math/big: a non-zero number has at
// most 38 significant digits and a magnitude in [1E-130, 1E+126); a zero
// has an exponent (as written) in -130..125.
func refValid(t *testing.T, s string) bool {
	t.Helper()
	if !json.Valid([]byte(s)) {
		return false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("big.Rat cannot parse %q", s)
	}
	mant, exp := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	if r.Sign() == 0 {
		e, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
		if !ok {
			t.Fatalf("bad exponent in %q", s)
		}
		return e.Cmp(big.NewInt(event.MinNumberExponent)) >= 0 && e.Cmp(big.NewInt(event.MaxNumberExponent)) <= 0
	}
	// Significant digits: the mantissa's digits as an integer, trailing
	// zeros divided away.
	digits, ok := new(big.Int).SetString(strings.Replace(strings.TrimLeft(mant, "-"), ".", "", 1), 10)
	if !ok {
		t.Fatalf("bad mantissa in %q", s)
	}
	ten := big.NewInt(10)
	for {
		q, rem := new(big.Int).QuoRem(digits, ten, new(big.Int))
		if rem.Sign() != 0 {
			break
		}
		digits = q
	}
	if len(digits.String()) > event.MaxNumberDigits {
		return false
	}
	abs := new(big.Rat).Abs(r)
	lo := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(ten, big.NewInt(-event.MinNumberExponent), nil))
	hi := new(big.Rat).SetInt(new(big.Int).Exp(ten, big.NewInt(event.MaxNumberExponent+1), nil))
	return abs.Cmp(lo) >= 0 && abs.Cmp(hi) < 0
}
