package contract_test

import (
	"encoding/json"
	"testing"
	"unicode"

	"github.com/triggers-dev/triggers/contract"
)

// The characters a description may not hold, by class, and those it
// keeps: the bidirectional controls of "Trojan Source" (CVE-2021-42574),
// the line and paragraph separators and the invisible format characters
// are refused as the control characters are, while the joiners that
// Persian, the Indic scripts and emoji sequences need pass.
func TestDescriptionRefusal(t *testing.T) {
	for r, want := range map[rune]string{
		0x00: contract.TextControl, '\t': contract.TextControl, '\n': contract.TextControl, 0x1b: contract.TextControl,
		0x7f: contract.TextControl, 0x85: contract.TextControl, 0x9f: contract.TextControl,
		0x202A: contract.TextBidiControl, 0x202B: contract.TextBidiControl, 0x202C: contract.TextBidiControl,
		0x202D: contract.TextBidiControl, 0x202E: contract.TextBidiControl,
		0x2066: contract.TextBidiControl, 0x2067: contract.TextBidiControl, 0x2068: contract.TextBidiControl, 0x2069: contract.TextBidiControl,
		0x061C: contract.TextBidiControl, 0x200E: contract.TextBidiControl, 0x200F: contract.TextBidiControl,
		0x2028: contract.TextSeparator, 0x2029: contract.TextSeparator,
		0x200B: contract.TextInvisible, 0x2060: contract.TextInvisible, 0xFEFF: contract.TextInvisible,
		0x00AD: contract.TextInvisible, 0x2061: contract.TextInvisible, 0x2064: contract.TextInvisible,
		0x206A: contract.TextInvisible, 0x206F: contract.TextInvisible, 0xFFF9: contract.TextInvisible, 0xFFFB: contract.TextInvisible,
		0x1D173: contract.TextInvisible, 0x13430: contract.TextInvisible, 0x1BCA0: contract.TextInvisible,
		0xE0001: contract.TextInvisible, 0xE0020: contract.TextInvisible, 0xE0041: contract.TextInvisible, 0xE007F: contract.TextInvisible,
		// Kept.
		0x200C: "", 0x200D: "", 0x180E: "", 0x0600: "", 0x0605: "", 0x06DD: "", 0x070F: "", 0x08E2: "", 0x110BD: "",
		'a': "", ' ': "", 0xA0: "", 0xA1: "", 0x3000: "", 0x034F: "", 0xFE0F: "", 0xE0100: "", 0x20E3: "",
		'é': "", 'ש': "", 'ع': "", 'क': "", '्': "", '日': "", 0x1F600: "", 0x1F1EB: "", 0x1F3FB: "", 0x10FFFF: "",
	} {
		if got := contract.DescriptionRefusal(r); got != want {
			t.Errorf("DescriptionRefusal(%U) = %q, want %q", r, got, want)
		}
	}
	// Only control, format and separator characters are refused, and
	// every format character but the few kept.
	kept := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		got := contract.DescriptionRefusal(r)
		if got != "" && !unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			t.Errorf("DescriptionRefusal(%U) = %q: neither a control, a format character nor a separator", r, got)
		}
		if got == "" && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			kept++
			if r != 0x200C && r != 0x200D && r != 0x180E && !unicode.Is(unicode.Prepended_Concatenation_Mark, r) {
				t.Errorf("DescriptionRefusal(%U) = \"\": a format character that is not kept", r)
			}
		}
	}
	if kept != 3+13 {
		t.Errorf("%d format characters kept, want 16: U+200C, U+200D, U+180E and the 13 prepended concatenation marks", kept)
	}
}

// EscapeJSON writes exactly the characters its predicate picks as \u
// escapes (a surrogate pair above U+FFFF), copies the rest byte for byte,
// and the text decodes to the value that was encoded.
func TestEscapeJSON(t *testing.T) {
	value := map[string]string{"d": "a\u00e9\u202e\U0001F600\u200d\u009b z"}
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		escape func(rune) bool
		want   string
	}{
		"outside ASCII": {func(r rune) bool { return r > 0x7f }, `{"d":"a\u00e9\u202e\ud83d\ude00\u200d\u009b z"}`},
		"refused":       {func(r rune) bool { return contract.DescriptionRefusal(r) != "" }, "{\"d\":\"a\u00e9\\u202e\U0001F600\u200d\\u009b z\"}"},
		"nothing":       {func(rune) bool { return false }, string(data)},
	} {
		got := contract.EscapeJSON(data, tc.escape)
		if string(got) != tc.want {
			t.Errorf("%s: EscapeJSON = %s, want %s", name, got, tc.want)
		}
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil || back["d"] != value["d"] {
			t.Errorf("%s: %s decodes to %q (%v), want %q", name, got, back["d"], err, value["d"])
		}
	}
}
