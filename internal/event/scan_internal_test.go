package event

import (
	"strings"
	"testing"
)

// firstInvalidUTF8 and loneSurrogate scan from the offset jsontext reports.
// jsontext reports the offending byte itself, so through ParseCreate their
// scanning never runs past it; these tests hold them to their documented
// contract for any starting offset.

func TestFirstInvalidUTF8(t *testing.T) {
	for _, tt := range []struct {
		data       string
		from, want int64
	}{
		{"a\xff", 0, 1},
		{"aé\xffb", 0, 3},
		{"a👋b\xc3", 1, 6},
		{"ab", 0, 0},
		{"\xff", -1, -1},
		{"ab\xff", 5, 5},
	} {
		if got := firstInvalidUTF8([]byte(tt.data), tt.from); got != tt.want {
			t.Errorf("firstInvalidUTF8(%q, %d) = %d, want %d", tt.data, tt.from, got, tt.want)
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	for _, tt := range []struct {
		data     string
		from     int64
		want     int64
		wantText string
	}{
		{`x\ud800`, 0, 1, `\ud800`},
		{`\ud800\udc00\udfff`, 0, 12, `\udfff`},
		{`\ue000\udc00`, 0, 6, `\udc00`},
		{`\\ud800\n\udbff`, 0, 9, `\udbff`},
		{`abc`, 0, 0, `\u....`},
		{`\ud83d\ude00`, -3, -3, `\u....`},
	} {
		got, text := loneSurrogate([]byte(tt.data), tt.from)
		if got != tt.want || text != tt.wantText {
			t.Errorf("loneSurrogate(%q, %d) = %d, %q; want %d, %q", tt.data, tt.from, got, text, tt.want, tt.wantText)
		}
	}
}

// A syntax error names its place as a JSON Pointer, except at the top level.
func TestSyntaxErrorPlace(t *testing.T) {
	_, err := ParseCreate([]byte(`{"event_type":"x","payload":{"a":tru}}`))
	want := `malformed JSON at byte 36: invalid character '}' in literal true (expecting 'e') (in "/payload/a")`
	if ie, ok := err.(*InputError); !ok || ie.Message != want {
		t.Errorf("ParseCreate(payload a: tru) = %v, want %s", err, want)
	}
	_, err = ParseCreate([]byte(`x`))
	if ie, ok := err.(*InputError); !ok || !strings.HasPrefix(ie.Message, "malformed JSON at byte 0: ") || strings.Contains(ie.Message, "(in ") {
		t.Errorf("ParseCreate(x) = %v, want a malformed JSON at byte 0 without a place", err)
	}
}
