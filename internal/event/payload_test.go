package event_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
)

// gen builds an attribute value from fuzz bytes: every member type,
// including those the API never writes (sets, binary), nil values, NULL
// false, numbers that are not JSON, and strings with invalid UTF-8.
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) str() string {
	n := int(g.byte() % 8)
	if n > len(g.b) {
		n = len(g.b)
	}
	s := string(g.b[:n])
	g.b = g.b[n:]
	return s
}

var numbers = []string{"0", "-0", "1", "1.5", "1e2", "1E+2", "-12.50e-3", "", ".5", "1.", "+1", "01", "1e", "NaN", "123456789012345678901234567890"}

func (g *gen) value(depth int) types.AttributeValue {
	kind := g.byte() % 13
	if depth > 4 && kind >= 4 && kind <= 6 {
		kind = 0
	}
	switch kind {
	case 0:
		return &types.AttributeValueMemberS{Value: g.str()}
	case 1:
		return &types.AttributeValueMemberN{Value: numbers[int(g.byte())%len(numbers)]}
	case 2:
		return &types.AttributeValueMemberBOOL{Value: g.byte()%2 == 0}
	case 3:
		return &types.AttributeValueMemberNULL{Value: g.byte()%2 == 0}
	case 4:
		n := int(g.byte() % 5)
		var m map[string]types.AttributeValue
		if g.byte()%4 != 0 {
			m = map[string]types.AttributeValue{}
		}
		for range n {
			if m == nil {
				m = map[string]types.AttributeValue{}
			}
			m[g.str()] = g.value(depth + 1)
		}
		return &types.AttributeValueMemberM{Value: m}
	case 5:
		n := int(g.byte() % 5)
		var l []types.AttributeValue
		for range n {
			l = append(l, g.value(depth+1))
		}
		return &types.AttributeValueMemberL{Value: l}
	case 6:
		return nil
	case 7:
		var ss []string
		for range int(g.byte() % 3) {
			ss = append(ss, g.str())
		}
		return &types.AttributeValueMemberSS{Value: ss}
	case 8:
		var ns []string
		for range int(g.byte() % 3) {
			ns = append(ns, numbers[int(g.byte())%len(numbers)])
		}
		return &types.AttributeValueMemberNS{Value: ns}
	case 9:
		return &types.AttributeValueMemberB{Value: []byte(g.str())}
	case 10:
		var bs [][]byte
		for range int(g.byte() % 3) {
			bs = append(bs, []byte(g.str()))
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case 11:
		return &types.AttributeValueMemberS{Value: "<&>\u2028\u2029\x00\x1f\x7f\"\\\xff" + g.str()}
	}
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{g.str(): g.value(depth + 1), "\u2028<": nil}}
}

// FuzzAppendValue: AppendValue writes what encoding/json writes for
// eventtest.FromAttributeValue of the same value, HTML escaping on and off, or
// fails where encoding/json fails.
func FuzzAppendValue(f *testing.F) {
	for _, s := range []string{"", "\x04\x03\x01a\x00\x01b\x01\x05c\x0b", "\x0c\x02ab\x07", "\x05\x04\x01\x03\x09\x02\xff\xfe\x0a\x02\x01x", "\x04\x01\x02\xe2\x80\x01\x01\x07"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		av := g.value(0)
		for _, esc := range []bool{false, true} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(esc)
			wantErr := enc.Encode(eventtest.FromAttributeValue(av))
			got, err := event.AppendValue([]byte("prefix"), av, esc)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("AppendValue(%#v) error %v, encoding/json %v", av, err, wantErr)
			}
			if err != nil {
				continue
			}
			if w := append([]byte("prefix"), bytes.TrimSuffix(want.Bytes(), []byte("\n"))...); !bytes.Equal(got, w) {
				t.Fatalf("AppendValue(%#v, %v) = %q\nwant %q", av, esc, got, w)
			}
			if m, ok := av.(*types.AttributeValueMemberM); ok {
				gotP, err := event.Payload(m.Value).AppendJSON([]byte("prefix"), esc)
				if err != nil || !bytes.Equal(gotP, got) {
					t.Fatalf("Payload.AppendJSON = %q, %v; want %q", gotP, err, got)
				}
			}
		}
	})
}
