// JSON encoding of events: the bytes encoding/json writes for an Event
// with its payload decoded, produced without reflection.

package event

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends e's JSON to dst exactly as encoding/json with HTML
// escaping off writes the Event (without its trailing newline): the body
// of the API's event responses. A nil Payload is written as {}.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"event_id":`...)
	dst = AppendString(dst, e.ID, false)
	dst = append(dst, `,"event_type":`...)
	dst = AppendString(dst, e.Type, false)
	dst = append(dst, `,"payload":`...)
	var err error
	if dst, err = e.Payload.AppendJSON(dst, false); err != nil {
		return dst, err
	}
	dst = append(dst, `,"status":`...)
	dst = AppendString(dst, string(e.Status), false)
	dst = append(dst, `,"timestamp":`...)
	dst = AppendString(dst, e.Timestamp, false)
	dst = append(dst, `,"retry_count":`...)
	dst = strconv.AppendInt(dst, int64(e.RetryCount), 10)
	dst = append(dst, `,"metadata":{"source_ip":`...)
	dst = AppendString(dst, e.Metadata.SourceIP, false)
	dst = append(dst, `,"api_version":`...)
	dst = AppendString(dst, e.Metadata.APIVersion, false)
	if e.Metadata.CorrelationID != "" {
		dst = append(dst, `,"correlation_id":`...)
		dst = AppendString(dst, e.Metadata.CorrelationID, false)
	}
	return append(dst, "}}"...), nil
}

// MarshalJSON implements json.Marshaler with AppendJSON. encoding/json
// then applies its own HTML escaping when it is on, which gives the bytes
// it writes for the Event's fields decoded (the payload as
// map[string]any).
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// safe holds the ASCII bytes a JSON string holds as they are, HTML
// escaping on (encoding/json's htmlSafeSet).
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// AppendString appends s to dst as a JSON string exactly as encoding/json
// writes it: ", \ and control characters escaped (\b, \f, \n, \r, \t or
// \u00XX), U+2028 and U+2029 as \u2028 and \u2029, each byte of invalid
// UTF-8 as \ufffd, and with escapeHTML <, > and & as \u003c, \u003e and
// \u0026.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] || (!escapeHTML && (b == '<' || b == '>' || b == '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
