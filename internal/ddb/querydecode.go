package ddb

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// operationDeserializer is the ID of the SDK's response decoder in every
// operation's deserialize step.
const operationDeserializer = "OperationDeserializer"

// FastQueryDecoding is a per-call option of Query (and only Query) that
// decodes a successful response in one pass over its bytes, straight into
// attribute values, instead of the SDK's decoder (encoding/json into
// interface{} values, then a walk of those into attribute values), which
// costs several times the CPU and allocations on a page of 50 events. The
// result is the SDK's to the value (the tests hold the two to it): any
// response it does not take in full (an error status, ConsumedCapacity,
// a null, an unknown member, malformed JSON, trailing bytes) goes to the
// SDK's own decoder, on the same bytes.
func FastQueryDecoding(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, swapQueryDeserializer)
}

func swapQueryDeserializer(s *middleware.Stack) error {
	m := &queryDeserializer{}
	sdk, err := s.Deserialize.Swap(operationDeserializer, m)
	if err != nil {
		return fmt.Errorf("fast Query decoding: %w", err)
	}
	m.sdk = sdk
	return nil
}

// queryDeserializer decodes Query responses (decodeQuery), handing what it
// does not take to the SDK's decoder (sdk).
type queryDeserializer struct {
	sdk middleware.DeserializeMiddleware
}

func (m *queryDeserializer) ID() string { return operationDeserializer }

func (m *queryDeserializer) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if ok && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		body, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if rerr == nil {
			if q, ok := decodeQuery(body); ok {
				out.Result = q
				return out, md, nil
			}
		}
		// The SDK's decoder reads the same bytes (and the read error, a
		// checksum mismatch say, where the body ended in one).
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{rerr}))
	}
	return m.sdk.HandleDeserialize(ctx, in, received{out, md})
}

// received is the rest of the deserialize step, already run: the SDK's
// decoder, called after it, gets its response.
type received struct {
	out middleware.DeserializeOutput
	md  middleware.Metadata
}

func (r received) HandleDeserialize(context.Context, middleware.DeserializeInput) (middleware.DeserializeOutput, middleware.Metadata, error) {
	return r.out, r.md, nil
}

// errReader returns err (io.EOF when nil) on every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err == nil {
		return 0, io.EOF
	}
	return 0, r.err
}

// decodeQuery decodes a Query response body: one JSON object of Items,
// Count, ScannedCount and LastEvaluatedKey, nothing else. ok is false for
// anything else, which the SDK's decoder then reads. Strings are
// substrings of one copy of the body unless escaped or not ASCII.
func decodeQuery(body []byte) (*dynamodb.QueryOutput, bool) {
	p := &parser{b: body, s: string(body)}
	q := &dynamodb.QueryOutput{}
	if !p.consume('{') {
		return nil, false
	}
	if !p.consume('}') {
		for {
			key, ok := p.str()
			if !ok || !p.consume(':') {
				return nil, false
			}
			switch key {
			case "Items":
				if q.Items, ok = p.items(); !ok {
					return nil, false
				}
			case "LastEvaluatedKey":
				if q.LastEvaluatedKey, ok = p.attrMap(0); !ok {
					return nil, false
				}
			case "Count":
				if q.Count, ok = p.int32(); !ok {
					return nil, false
				}
			case "ScannedCount":
				if q.ScannedCount, ok = p.int32(); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
			if p.consume('}') {
				break
			}
			if !p.consume(',') {
				return nil, false
			}
		}
	}
	p.ws()
	return q, p.i == len(p.b)
}

// parser reads JSON from b (s is the same bytes as a string) at i.
type parser struct {
	b []byte
	s string
	i int
	// strs and nums are slabs the S and N values are carved from, a few
	// allocations for a page's hundreds of values.
	strs []types.AttributeValueMemberS
	nums []types.AttributeValueMemberN
}

// slab is how many values one slab allocation holds.
const slab = 128

func (p *parser) newS(v string) *types.AttributeValueMemberS {
	if len(p.strs) == 0 {
		p.strs = make([]types.AttributeValueMemberS, slab)
	}
	av := &p.strs[0]
	p.strs = p.strs[1:]
	av.Value = v
	return av
}

func (p *parser) newN(v string) *types.AttributeValueMemberN {
	if len(p.nums) == 0 {
		p.nums = make([]types.AttributeValueMemberN, slab/4)
	}
	av := &p.nums[0]
	p.nums = p.nums[1:]
	av.Value = v
	return av
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// consume skips white space and then c, if c is next.
func (p *parser) consume(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string. One with an escape, a control character or a
// non-ASCII byte is decoded by encoding/json, as the SDK's decoder does.
func (p *parser) str() (string, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	// ifs, not a tagless switch: gremlins sees no coverage in its cases.
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			p.i = j + 1
			return p.s[start:j], true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return p.slowStr(start)
		}
	}
	return "", false
}

func (p *parser) slowStr(start int) (string, bool) {
	plain := true
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		if c == '\\' {
			plain = false
			j++
			continue
		}
		if c < 0x20 {
			return "", false
		}
		if c == '"' {
			tok := p.b[start-1 : j+1]
			p.i = j + 1
			if plain && utf8.Valid(tok) {
				return p.s[start:j], true
			}
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// int32 reads a non-negative integer that fits in an int32 (at most 9
// digits, no leading zero, no fraction or exponent).
func (p *parser) int32() (int32, bool) {
	p.ws()
	var n int32
	digits := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if digits == 9 || (digits == 1 && n == 0) {
			return 0, false
		}
		n = n*10 + int32(p.b[p.i]-'0')
		digits++
		p.i++
	}
	if digits == 0 || (p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E')) {
		return 0, false
	}
	return n, true
}

// bool reads true or false.
func (p *parser) bool() (bool, bool) {
	p.ws()
	switch {
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return true, true
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return false, true
	}
	return false, false
}

// list reads a JSON array, calling elem for each element.
func (p *parser) list(elem func() bool) bool {
	if !p.consume('[') {
		return false
	}
	if p.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.consume(']') {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

func (p *parser) items() ([]map[string]types.AttributeValue, bool) {
	items := []map[string]types.AttributeValue{}
	size := 0 // the previous item's: a page's items are alike
	ok := p.list(func() bool {
		m, ok := p.attrMap(size)
		items = append(items, m)
		size = len(m)
		return ok
	})
	return items, ok
}

// attrMap reads a map of attribute values (an item, a key, an M), of
// about size members.
func (p *parser) attrMap(size int) (map[string]types.AttributeValue, bool) {
	if !p.consume('{') {
		return nil, false
	}
	m := make(map[string]types.AttributeValue, size)
	if p.consume('}') {
		return m, true
	}
	for {
		name, ok := p.str()
		if !ok || !p.consume(':') {
			return nil, false
		}
		if m[name], ok = p.value(); !ok {
			return nil, false
		}
		if p.consume('}') {
			return m, true
		}
		if !p.consume(',') {
			return nil, false
		}
	}
}

// value reads one attribute value: an object of exactly one member.
func (p *parser) value() (types.AttributeValue, bool) {
	if !p.consume('{') {
		return nil, false
	}
	tag, ok := p.str()
	if !ok || !p.consume(':') {
		return nil, false
	}
	var v types.AttributeValue
	switch tag {
	case "S":
		var s string
		s, ok = p.str()
		v = p.newS(s)
	case "N":
		var s string
		s, ok = p.str()
		v = p.newN(s)
	case "B":
		var b []byte
		b, ok = p.binary()
		v = &types.AttributeValueMemberB{Value: b}
	case "BOOL":
		var b bool
		b, ok = p.bool()
		v = &types.AttributeValueMemberBOOL{Value: b}
	case "NULL":
		var b bool
		b, ok = p.bool()
		v = &types.AttributeValueMemberNULL{Value: b}
	case "M":
		var m map[string]types.AttributeValue
		m, ok = p.attrMap(0)
		v = &types.AttributeValueMemberM{Value: m}
	case "L":
		l := []types.AttributeValue{}
		ok = p.list(func() bool {
			e, ok := p.value()
			l = append(l, e)
			return ok
		})
		v = &types.AttributeValueMemberL{Value: l}
	case "SS", "NS":
		ss := []string{}
		ok = p.list(func() bool {
			s, ok := p.str()
			ss = append(ss, s)
			return ok
		})
		if tag == "SS" {
			v = &types.AttributeValueMemberSS{Value: ss}
		} else {
			v = &types.AttributeValueMemberNS{Value: ss}
		}
	case "BS":
		bs := [][]byte{}
		ok = p.list(func() bool {
			b, ok := p.binary()
			bs = append(bs, b)
			return ok
		})
		v = &types.AttributeValueMemberBS{Value: bs}
	default:
		return nil, false
	}
	if !ok || !p.consume('}') {
		return nil, false
	}
	return v, true
}

// binary reads a base64 string, decoded as the SDK does.
func (p *parser) binary() ([]byte, bool) {
	s, ok := p.str()
	if !ok {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}
