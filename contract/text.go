package contract

import (
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Classes of the characters refused in a description (DescriptionRefusal).
const (
	// TextControl is a control character: C0 (U+0000-U+001F, tab and
	// line breaks included), DEL (U+007F) or C1 (U+0080-U+009F), as
	// unicode.IsControl.
	TextControl = "control character"
	// TextBidiControl is a bidirectional control: the embeddings and
	// overrides U+202A-U+202E, the isolates U+2066-U+2069 and the marks
	// U+061C, U+200E and U+200F. Each reorders the text shown around it,
	// so a listing shows it in another order than it holds ("Trojan
	// Source", CVE-2021-42574).
	TextBidiControl = "bidirectional control character"
	// TextSeparator is the line separator U+2028 or the paragraph
	// separator U+2029: a line break that unicode.IsControl misses.
	TextSeparator = "line or paragraph separator"
	// TextInvisible is any other format character (Unicode category Cf)
	// but those kept (see DescriptionRefusal): zero-width space U+200B,
	// word joiner U+2060, byte order mark U+FEFF, soft hyphen U+00AD,
	// the invisible operators U+2061-U+2064, the tag characters
	// U+E0001-U+E007F and the like. None is seen where the text is shown,
	// so two descriptions that look the same differ.
	TextInvisible = "invisible format character"
)

// DescriptionRefusal returns the class of r (TextControl,
// TextBidiControl, TextSeparator or TextInvisible) when a description a
// client sets may not hold it, and "" when it may. The rule: no control
// character, no format character (Unicode category Cf) and no line or
// paragraph separator, save the format characters that written text
// needs and that move nothing: the zero-width non-joiner U+200C and
// joiner U+200D (Persian, the Indic scripts, emoji sequences), the
// Mongolian vowel separator U+180E (it shapes the vowel after it, as
// U+200C does), and the prepended concatenation marks (Arabic number sign
// U+0600 and the like, unicode.Prepended_Concatenation_Mark), which are
// visible. Every other character passes, letters of any script, marks,
// emoji and variation selectors included. The classes follow Go's
// unicode tables (unicode.Version).
func DescriptionRefusal(r rune) string {
	switch {
	case unicode.IsControl(r):
		return TextControl
	case r == 0x061C, r == 0x200E, r == 0x200F, 0x202A <= r && r <= 0x202E, 0x2066 <= r && r <= 0x2069:
		return TextBidiControl
	case r == 0x2028, r == 0x2029:
		return TextSeparator
	case r == 0x200C, r == 0x200D, r == 0x180E, unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return ""
	case unicode.Is(unicode.Cf, r):
		return TextInvisible
	}
	return ""
}

// EscapeJSON returns data, JSON text, with every character for which
// escape reports true written as a \u escape (a surrogate pair above
// U+FFFF); the other characters are copied as they are. Outside its
// strings JSON is ASCII without controls, so an escaped character other
// than those is in a string, where the escape decodes to the same text:
// a reader gets exactly the value that was encoded. The OpenAPI document
// escapes everything outside ASCII (so the invisible characters of a
// pattern are seen in it); triggers-keys escapes what DescriptionRefusal
// refuses (so a stored description cannot bring a terminal escape to a
// listing). An invalid UTF-8 byte is written as the escape of U+FFFD when
// escape(utf8.RuneError) reports true, and as U+FFFD otherwise.
func EscapeJSON(data []byte, escape func(rune) bool) []byte {
	out := make([]byte, 0, len(data))
	for _, r := range string(data) {
		switch {
		case !escape(r):
			out = utf8.AppendRune(out, r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}
