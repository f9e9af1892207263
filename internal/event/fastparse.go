// The fast path of ParseCreate: a request body decoded straight into a
// Payload, for valid input only.

package event

import (
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// parseFast is the fast path of ParseCreate: ok is false for anything it
// does not accept.
func parseFast(data []byte) (CreateRequest, bool) {
	p := parsers.Get().(*parser)
	defer p.release()
	p.s = string(data)
	// First chunks sized to the body: about one value per 32 bytes.
	p.chunk = min(max(len(data)/32, 16), 1024)
	return p.create()
}

// parser decodes one body. Its stacks are reused between bodies (pooled);
// the slabs the attribute values are carved from are not, since the
// values outlive the parse.
type parser struct {
	s string
	i int
	// chunk is the size of the slabs' first chunks.
	chunk int
	// keys and vals are the members of the open objects, in lockstep;
	// elems the elements of the open arrays.
	keys  []string
	vals  []types.AttributeValue
	elems []types.AttributeValue
	// buf is scratch for unescaping strings.
	buf []byte

	ss    slab[types.AttributeValueMemberS]
	ns    slab[types.AttributeValueMemberN]
	bools slab[types.AttributeValueMemberBOOL]
	nulls slab[types.AttributeValueMemberNULL]
	ms    slab[types.AttributeValueMemberM]
	ls    slab[types.AttributeValueMemberL]
	// lists backs the Value of every L, each a full slice of it.
	lists []types.AttributeValue
}

var parsers = sync.Pool{New: func() any { return new(parser) }}

func (p *parser) release() {
	if cap(p.keys) > 4096 || cap(p.elems) > 4096 || cap(p.buf) > 64<<10 {
		return // let a huge body's scratch go
	}
	clear(p.keys[:cap(p.keys)])
	clear(p.vals[:cap(p.vals)])
	clear(p.elems[:cap(p.elems)])
	*p = parser{keys: p.keys[:0], vals: p.vals[:0], elems: p.elems[:0], buf: p.buf[:0]}
	parsers.Put(p)
}

// slab hands out pointers to values allocated in chunks, so that a
// payload costs a few allocations per kind of value, not one per value.
type slab[T any] struct{ buf []T }

// next returns a pointer to a new zero value; a new chunk holds first
// values, then twice the last chunk's, up to 1024.
func (s *slab[T]) next(first int) *T {
	if len(s.buf) == cap(s.buf) {
		s.buf = make([]T, 0, min(max(first, 2*cap(s.buf)), 1024))
	}
	s.buf = s.buf[:len(s.buf)+1]
	return &s.buf[len(s.buf)-1]
}

// list returns a slice of n values for an L, carved from a shared chunk.
func (p *parser) list(n int) []types.AttributeValue {
	if n == 0 {
		return []types.AttributeValue{} // not nil, as the reference decoder makes it
	}
	if cap(p.lists)-len(p.lists) < n {
		p.lists = make([]types.AttributeValue, 0, max(n, 64, 2*cap(p.lists)))
	}
	l := p.lists[len(p.lists) : len(p.lists)+n : len(p.lists)+n]
	p.lists = p.lists[:len(p.lists)+n]
	return l
}

func (p *parser) create() (CreateRequest, bool) {
	fail := func() (CreateRequest, bool) { return CreateRequest{}, false }
	p.ws()
	if !p.eat('{') {
		return fail()
	}
	var typ string
	var payload map[string]types.AttributeValue
	seenType, seenPayload := false, false
	for {
		p.ws()
		key, ok := p.str()
		if !ok {
			return fail()
		}
		p.ws()
		if !p.eat(':') {
			return fail()
		}
		p.ws()
		switch {
		case key == "event_type" && !seenType && p.peek() == '"':
			seenType = true
			if typ, ok = p.str(); !ok {
				return fail()
			}
		case key == "payload" && !seenPayload && p.peek() == '{':
			seenPayload = true
			if payload, ok = p.object(1); !ok {
				return fail()
			}
		default:
			return fail()
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return fail()
	}
	p.ws()
	if p.i != len(p.s) || !seenType || !seenPayload || !ValidEventType(typ) {
		return fail()
	}
	return CreateRequest{EventType: typ, Payload: payload}, true
}

func (p *parser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// value decodes the value at p.i; depth is the level a container there
// would have (the payload object is level 1).
func (p *parser) value(depth int) (types.AttributeValue, bool) {
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		v := p.ss.next(p.chunk)
		v.Value = s
		return v, true
	case c == '{':
		m, ok := p.object(depth)
		if !ok {
			return nil, false
		}
		v := p.ms.next(p.chunk)
		v.Value = m
		return v, true
	case c == '[':
		return p.array(depth)
	case c == 't':
		if !p.word("true") {
			return nil, false
		}
		v := p.bools.next(p.chunk)
		v.Value = true
		return v, true
	case c == 'f':
		if !p.word("false") {
			return nil, false
		}
		return p.bools.next(p.chunk), true
	case c == 'n':
		if !p.word("null") {
			return nil, false
		}
		v := p.nulls.next(p.chunk)
		v.Value = true
		return v, true
	case c == '-' || isDigit(c):
		end, exp := scanNumber(p.s, p.i)
		if end == p.i {
			return nil, false
		}
		lit := p.s[p.i:end]
		if !dynamoNumber(lit, exp) {
			return nil, false
		}
		p.i = end
		v := p.ns.next(p.chunk)
		v.Value = lit
		return v, true
	}
	return nil, false
}

// word consumes the literal w (true, false, null) at p.i.
func (p *parser) word(w string) bool {
	if len(p.s)-p.i < len(w) || p.s[p.i:p.i+len(w)] != w {
		return false
	}
	p.i += len(w)
	return true
}

// dynamoNumber reports whether the JSON number lit is one DynamoDB stores
// exactly (ValidNumber). Without an exponent, 38 digits or fewer
// always are: at most 38 significant digits, magnitude from 1E-37 to below
// 1E+38.
func dynamoNumber(lit string, exp bool) bool {
	if !exp {
		digits := len(lit)
		for i := 0; i < len(lit); i++ {
			if lit[i] == '-' || lit[i] == '.' {
				digits--
			}
		}
		if digits <= MaxNumberDigits {
			return true
		}
	}
	return ValidNumber(lit) == nil
}

// object decodes the object at p.i (at '{') at level depth.
func (p *parser) object(depth int) (map[string]types.AttributeValue, bool) {
	if depth > MaxPayloadDepth {
		return nil, false
	}
	p.i++ // '{'
	start := len(p.keys)
	p.ws()
	if !p.eat('}') {
		for {
			p.ws()
			key, ok := p.str()
			if !ok || key == "" {
				return nil, false
			}
			p.ws()
			if !p.eat(':') {
				return nil, false
			}
			p.ws()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			p.keys = append(p.keys, key)
			p.vals = append(p.vals, v)
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return nil, false
		}
	}
	n := len(p.keys) - start
	m := make(map[string]types.AttributeValue, n)
	for j := start; j < len(p.keys); j++ {
		m[p.keys[j]] = p.vals[j]
	}
	p.keys, p.vals = p.keys[:start], p.vals[:start]
	// A name seen twice (after unescaping) leaves fewer entries: not
	// I-JSON.
	return m, len(m) == n
}

// array decodes the array at p.i (at '[') at level depth.
func (p *parser) array(depth int) (types.AttributeValue, bool) {
	if depth > MaxPayloadDepth {
		return nil, false
	}
	p.i++ // '['
	start := len(p.elems)
	p.ws()
	if !p.eat(']') {
		for {
			p.ws()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			p.elems = append(p.elems, v)
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				break
			}
			return nil, false
		}
	}
	l := p.list(len(p.elems) - start)
	copy(l, p.elems[start:])
	p.elems = p.elems[:start]
	v := p.ls.next(p.chunk)
	v.Value = l
	return v, true
}

// str decodes the string at p.i (at '"'): valid UTF-8, no control
// characters, escapes per RFC 8259 with surrogates only in pairs. A
// string without escapes is a substring of the body, not a copy.
func (p *parser) str() (string, bool) {
	if p.peek() != '"' {
		return "", false
	}
	p.i++
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, true
		case c == '\\':
			return p.unescape(start)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			p.i += size
		}
	}
	return "", false
}

// unescape finishes a string with escapes that started at start; p.i is
// at the first backslash.
func (p *parser) unescape(start int) (string, bool) {
	b := append(p.buf[:0], p.s[start:p.i]...)
	defer func() { p.buf = b[:0] }()
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), true
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", false
				}
				switch {
				case 0xd800 <= r && r < 0xdc00:
					if !p.eat('\\') || !p.eat('u') {
						return "", false
					}
					lo, ok := p.hex4()
					if !ok || lo < 0xdc00 || lo >= 0xe000 {
						return "", false
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				case 0xdc00 <= r && r < 0xe000:
					return "", false
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			b = append(b, p.s[p.i:p.i+size]...)
			p.i += size
		}
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape.
func (p *parser) hex4() (rune, bool) {
	if len(p.s)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}
