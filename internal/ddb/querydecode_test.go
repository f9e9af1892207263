package ddb

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cannedHTTP answers every request with status and body.
type cannedHTTP struct {
	status int
	body   []byte
}

func (c cannedHTTP) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: c.status,
		Header:     http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(bytes.NewReader(c.body)),
		Request:    r,
	}, nil
}

// query sends a Query to a client answering with status and body, with
// the fast decoding or without (the SDK's).
func query(t testing.TB, status int, body []byte, fast bool) (*dynamodb.QueryOutput, error) {
	t.Helper()
	return queryWith(cannedClient(status, body), fast)
}

// cannedClient is a DynamoDB client answering with status and body.
func cannedClient(status int, body []byte) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String("http://127.0.0.1:1"),
		Credentials:      aws.AnonymousCredentials{},
		HTTPClient:       cannedHTTP{status, body},
		RetryMaxAttempts: 1,
	})
}

func queryWith(c *dynamodb.Client, fast bool) (*dynamodb.QueryOutput, error) {
	var opts []func(*dynamodb.Options)
	if fast {
		opts = append(opts, FastQueryDecoding)
	}
	return c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("t")}, opts...)
}

// sameAsSDK checks that the fast decoding gives the SDK's result for
// body, and reports whether it took the body itself.
func sameAsSDK(t testing.TB, status int, body []byte) bool {
	t.Helper()
	want, wantErr := query(t, status, body, false)
	got, gotErr := query(t, status, body, true)
	if wantErr != nil {
		require.Error(t, gotErr, "body %q", body)
		assert.Equal(t, wantErr.Error(), gotErr.Error(), "body %q", body)
	} else {
		require.NoError(t, gotErr, "body %q", body)
		assert.Equal(t, want.Items, got.Items, "body %q", body)
		assert.Equal(t, want.LastEvaluatedKey, got.LastEvaluatedKey, "body %q", body)
		assert.Equal(t, want.Count, got.Count, "body %q", body)
		assert.Equal(t, want.ScannedCount, got.ScannedCount, "body %q", body)
		assert.Equal(t, want.ConsumedCapacity, got.ConsumedCapacity, "body %q", body)
	}
	_, ok := decodeQuery(body)
	return ok && status == http.StatusOK
}

// encodeValue writes v as DynamoDB JSON.
func encodeValue(b *strings.Builder, v types.AttributeValue) {
	str := func(s string) {
		j, _ := json.Marshal(s)
		b.Write(j)
	}
	list := func(n int, elem func(int)) {
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			elem(i)
		}
		b.WriteByte(']')
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		b.WriteString(`{"S":`)
		str(v.Value)
	case *types.AttributeValueMemberN:
		b.WriteString(`{"N":`)
		str(v.Value)
	case *types.AttributeValueMemberB:
		b.WriteString(`{"B":`)
		str(base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberBOOL:
		fmt.Fprintf(b, `{"BOOL":%t`, v.Value)
	case *types.AttributeValueMemberNULL:
		fmt.Fprintf(b, `{"NULL":%t`, v.Value)
	case *types.AttributeValueMemberM:
		b.WriteString(`{"M":`)
		encodeMap(b, v.Value)
	case *types.AttributeValueMemberL:
		b.WriteString(`{"L":`)
		list(len(v.Value), func(i int) { encodeValue(b, v.Value[i]) })
	case *types.AttributeValueMemberSS:
		b.WriteString(`{"SS":`)
		list(len(v.Value), func(i int) { str(v.Value[i]) })
	case *types.AttributeValueMemberNS:
		b.WriteString(`{"NS":`)
		list(len(v.Value), func(i int) { str(v.Value[i]) })
	case *types.AttributeValueMemberBS:
		b.WriteString(`{"BS":`)
		list(len(v.Value), func(i int) { str(base64.StdEncoding.EncodeToString(v.Value[i])) })
	}
	b.WriteByte('}')
}

func encodeMap(b *strings.Builder, m map[string]types.AttributeValue) {
	b.WriteByte('{')
	first := true
	for k, v := range m {
		if !first {
			b.WriteByte(',')
		}
		first = false
		j, _ := json.Marshal(k)
		b.Write(j)
		b.WriteByte(':')
		encodeValue(b, v)
	}
	b.WriteByte('}')
}

// randomString mixes ASCII, escapes, control characters, non-ASCII text
// and invalid UTF-8 (json.Marshal writes U+FFFD for it).
func randomString(r *rand.Rand) string {
	parts := []string{"", "a", "event#2026", `quote"`, `back\slash`, "tab\t", "nl\n", "\x01", "é", "日本", "😀", "<&>", "\xff", "\u2028", strings.Repeat("x", 300)}
	var b strings.Builder
	for range r.IntN(4) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) types.AttributeValue {
	n := 6
	if depth < 3 {
		n = 11
	}
	bin := func() []byte {
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	strs := func(f func() string) []string {
		s := make([]string, r.IntN(3))
		for i := range s {
			s[i] = f()
		}
		return s
	}
	switch r.IntN(n) {
	case 0:
		return &types.AttributeValueMemberS{Value: randomString(r)}
	case 1:
		return &types.AttributeValueMemberN{Value: strconv.Itoa(r.IntN(1e6) - 5e5)}
	case 2:
		return &types.AttributeValueMemberB{Value: bin()}
	case 3:
		return &types.AttributeValueMemberBOOL{Value: r.IntN(2) == 0}
	case 4:
		return &types.AttributeValueMemberNULL{Value: r.IntN(2) == 0}
	case 5:
		return &types.AttributeValueMemberSS{Value: strs(func() string { return randomString(r) })}
	case 6:
		return &types.AttributeValueMemberNS{Value: strs(func() string { return strconv.Itoa(r.IntN(100)) })}
	case 7:
		bs := make([][]byte, r.IntN(3))
		for i := range bs {
			bs[i] = bin()
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case 8:
		l := make([]types.AttributeValue, r.IntN(3))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return &types.AttributeValueMemberL{Value: l}
	default:
		return &types.AttributeValueMemberM{Value: randomMap(r, depth+1)}
	}
}

func randomMap(r *rand.Rand, depth int) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{}
	for range r.IntN(5) {
		m[randomString(r)] = randomValue(r, depth)
	}
	return m
}

// randomBody is a Query response of random items, with a key and counts
// when r says so, in random member order.
func randomBody(r *rand.Rand) []byte {
	var members []string
	var b strings.Builder
	b.WriteByte('[')
	items := r.IntN(4)
	for i := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		encodeMap(&b, randomMap(r, 0))
	}
	b.WriteByte(']')
	members = append(members, `"Items":`+b.String())
	if r.IntN(2) == 0 {
		members = append(members, fmt.Sprintf(`"Count":%d`, items), fmt.Sprintf(`"ScannedCount":%d`, items+r.IntN(1000)))
	}
	if r.IntN(2) == 0 {
		b.Reset()
		encodeMap(&b, randomMap(r, 2))
		members = append(members, `"LastEvaluatedKey":`+b.String())
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return []byte("{" + strings.Join(members, ",") + "}")
}

// An inbox page as DynamoDB sends it: the fast decoding takes it and
// gives the SDK's result.
func TestFastQueryDecodingTakesAPage(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"Count":2,"Items":[`)
	for i := range 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"user_id":{"S":"tenant-a"},"timestamp#event_id":{"S":"2026-11-26T18:00:0%dZ#evt_%d"},"ttl":{"N":"1795000000"},`+
			`"payload":{"M":{"data":{"S":"xxxx"},"n":{"N":"1.5"},"ok":{"BOOL":true},"none":{"NULL":true},"list":{"L":[{"S":"a"},{"N":"2"}]}}}}`, i, i)
	}
	b.WriteString(`],"LastEvaluatedKey":{"user_id":{"S":"tenant-a"},"timestamp#event_id":{"S":"k"}},"ScannedCount":2}`)
	assert.True(t, sameAsSDK(t, http.StatusOK, []byte(b.String())), "the fast decoding handed an ordinary page to the SDK")
	got, err := query(t, http.StatusOK, []byte(b.String()), true)
	require.NoError(t, err)
	require.Len(t, got.Items, 2)
	assert.Equal(t, &types.AttributeValueMemberS{Value: "2026-11-26T18:00:01Z#evt_1"}, got.Items[1]["timestamp#event_id"])
	assert.Equal(t, int32(2), got.Count)
}

// Random responses of every attribute type, strings with escapes,
// non-ASCII and invalid UTF-8: the same result as the SDK's, and most
// taken by the fast decoding.
func TestFastQueryDecodingMatchesTheSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	taken := 0
	const n = 300
	for range n {
		if sameAsSDK(t, http.StatusOK, randomBody(r)) {
			taken++
		}
	}
	assert.Greater(t, taken, n*9/10, "responses taken by the fast decoding")
}

// What the fast decoding does not take goes to the SDK's decoder, on the
// same bytes: the same results and the same errors.
func TestFastQueryDecodingHandsTheRestToTheSDK(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
	}{
		{200, ``},
		{200, `null`},
		{200, `{}`},
		{200, `{"Items":[]}`},
		{200, `{"Items":null}`},
		{200, `{"Items":[null]}`},
		{200, `{"Items":[{"a":{}}]}`},
		{200, `{"Items":[{"a":{"S":null}}]}`},
		{200, `{"Items":[{"a":{"X":"x"}}]}`},
		{200, `{"Items":[{"a":{"S":1}}]}`},
		{200, `{"Items":[{"a":{"B":"!!"}}]}`},
		{200, `{"Items":[{"a":{"SS":["a",null]}}]}`},
		{200, `{"Items":[{"a":{"S":"\u00e9\ud800"}}]}`},
		{200, "{\"Items\":[{\"a\":{\"S\":\"ctl\x01\"}}]}"},
		// The lowest byte that is not ASCII, alone: invalid UTF-8, which
		// the SDK's decoder turns into U+FFFD.
		{200, "{\"Items\":[{\"a\":{\"S\":\"a\x80b\"}}]}"},
		{200, `{"Items":[],"Count":01}`},
		{200, `{"Items":[],"Count":1.0}`},
		{200, `{"Items":[],"Count":-1}`},
		{200, `{"Items":[],"Count":4294967297}`},
		{200, `{"Items":[],"Count":1e2}`},
		{200, `{"Items":[{"a":{"S":"1"}},{"a":{"S":"2"}}],"Items":[{"b":{"N":"3"}}]}`},
		{200, `{"Items":[{"a":{"S":"1"},"a":{"N":"2"}}]}`},
		{200, `{"Items":[]} trailing`},
		{200, `{"Items":[]}{"Items":[{"a":{"S":"x"}}]}`},
		{200, `{"Items":[],}`},
		{200, `{"Items":[{"a":{"BOOL":tru}}]}`},
		{200, `{"Items":[{"a":{"BOOL":truex}}]}`},
		{200, `{"Items":[],"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.5}}`},
		{200, `{"Items":[],"Unknown":1}`},
		{200, " \n{ \"Items\" : [ { \"a\" : { \"L\" : [ ] } } ] , \"Count\" : 0 }\t"},
		{200, `{"Items":[{"a":{"M":{}}},{"b":{"SS":[]}},{"c":{"BS":[]}},{"d":{"B":""}}]}`},
		// A status outside 2xx is an error whatever its body.
		{300, `{"Items":[{"a":{"S":"x"}}],"Count":1}`},
		{500, `{"Items":[{"a":{"S":"x"}}],"Count":1}`},
		{400, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no table"}`},
		{500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`},
	} {
		sameAsSDK(t, tc.status, []byte(tc.body))
	}
	// Two members in one value: the SDK keeps one of them, at random (it
	// ranges over a Go map); the fast decoding leaves it to the SDK.
	_, ok := decodeQuery([]byte(`{"Items":[{"a":{"S":"x","N":"1"}}]}`))
	assert.False(t, ok)
	// Some of them are the fast decoding's own: empty items, white space.
	_, ok = decodeQuery([]byte(`{"Items":[]}`))
	assert.True(t, ok)
	_, ok = decodeQuery([]byte(" \n{ \"Items\" : [ { \"a\" : { \"L\" : [ ] } } ] , \"Count\" : 0 }\t"))
	assert.True(t, ok)
}

func FuzzFastQueryDecoding(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add(randomBody(r))
	}
	f.Add([]byte(`{"Items":[{"a":{"S":"\u00e9\ud800"}}],"Count":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		// What the fast decoding does not take is the SDK's by
		// construction (and the SDK picks at random between two members
		// of one value, which the fast decoding never takes).
		if _, ok := decodeQuery(body); ok {
			sameAsSDK(t, http.StatusOK, body)
		}
	})
}

func BenchmarkQueryDecoding(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"Count":50,"Items":[`)
	for i := range 50 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"user_id":{"S":"load-inbox"},"timestamp#event_id":{"S":"2026-11-26T18:00:00.%06dZ#01JD%022d"},"status#timestamp":{"S":"received#2026-11-26T18:00:00.%06dZ"},"event_type#timestamp":{"S":"load.test#2026-11-26T18:00:00.%06dZ"},"event_id":{"S":"01JD%022d"},"event_type":{"S":"load.test"},"status":{"S":"received"},"ttl":{"N":"1795000000"},"created_at":{"S":"2026-11-26T18:00:00Z"},"metadata":{"M":{"source_ip":{"S":"127.0.0.1"},"api_version":{"S":"v1"}}},"payload":{"M":{"data":{"S":"%s"}}}}`, i, i, i, i, i, strings.Repeat("x", 1013))
	}
	sb.WriteString(`],"ScannedCount":50}`)
	body := []byte(sb.String())
	for _, fast := range []bool{false, true} {
		name := "sdk"
		if fast {
			name = "fast"
		}
		b.Run(name, func(b *testing.B) {
			c := cannedClient(http.StatusOK, body)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := queryWith(c, fast); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The client's Query really decodes through the fast path: its strings are
// substrings of one copy of the body, at the distance they have in the
// body (the SDK's decoder allocates each string on its own). Nothing else
// would notice a client whose option stopped taking pages: the results are
// the same.
func TestFastQueryDecodingIsTheClientsPath(t *testing.T) {
	// ASCII strings, then strings with a space and a letter that is not
	// ASCII (valid UTF-8, no escape: still substrings of the body).
	body := `{"Items":[{"a":{"S":"the-first-value"},"b":{"S":"the first valué"}},` +
		`{"a":{"S":"the-second-value"},"b":{"S":"the second valué"}}],"Count":2}`
	distance := uintptr(strings.Index(body, "the-second") - strings.Index(body, "the-first"))
	at := func(out *dynamodb.QueryOutput, i int, name string) uintptr {
		return uintptr(unsafe.Pointer(unsafe.StringData(out.Items[i][name].(*types.AttributeValueMemberS).Value)))
	}
	for _, status := range []int{http.StatusOK, 299} {
		got, err := query(t, status, []byte(body), true)
		require.NoError(t, err)
		assert.Equal(t, distance, at(got, 1, "a")-at(got, 0, "a"), "status %d: the second string is not where the body has it: not the fast path", status)
		assert.Equal(t, uintptr(strings.Index(body, "the first valu")-strings.Index(body, "the-first")), at(got, 0, "b")-at(got, 0, "a"),
			"status %d: a string with a space and a letter that is not ASCII is not a substring of the body", status)
	}
	sdk, err := query(t, http.StatusOK, []byte(body), false)
	require.NoError(t, err)
	assert.NotEqual(t, distance, at(sdk, 1, "a")-at(sdk, 0, "a"), "the SDK's strings are their own (the check above could not fail)")
}

// A response whose read failed after its last byte (a reset connection),
// or whose CRC32 does not match DynamoDB's x-amz-crc32, gets the SDK's
// answer: a page, as the SDK's decoder stops at the end of the JSON
// object and checks the CRC32 only on Close, whose error it drops. (The
// fast decoding hands a failed read to the SDK with the bytes read and the
// error, so that stays the SDK's behaviour if the SDK changes it.)
func TestFastQueryDecodingOnReadErrorsIsTheSDKs(t *testing.T) {
	body := []byte(`{"Items":[{"a":{"S":"x"}}],"Count":1}`)
	respond := func(header http.Header, rd func() io.Reader) *dynamodb.Client {
		header.Set("Content-Type", "application/x-amz-json-1.0")
		return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), Credentials: aws.AnonymousCredentials{},
			RetryMaxAttempts: 1, HTTPClient: smithyhttp.ClientDoFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: header.Clone(), Body: io.NopCloser(rd()), Request: r}, nil
			})})
	}
	for name, c := range map[string]*dynamodb.Client{
		"read error after the body": respond(http.Header{}, func() io.Reader {
			return io.MultiReader(bytes.NewReader(body), errReader{io.ErrUnexpectedEOF})
		}),
		"read error in the body": respond(http.Header{}, func() io.Reader {
			return io.MultiReader(bytes.NewReader(body[:20]), errReader{io.ErrUnexpectedEOF})
		}),
		"crc32 mismatch": respond(http.Header{"X-Amz-Crc32": {"12345"}}, func() io.Reader { return bytes.NewReader(body) }),
	} {
		want, wantErr := queryWith(c, false)
		got, gotErr := queryWith(c, true)
		if wantErr != nil {
			require.Error(t, gotErr, name)
			assert.Equal(t, wantErr.Error(), gotErr.Error(), name)
			continue
		}
		require.NoError(t, gotErr, name)
		assert.Equal(t, want.Items, got.Items, name)
		assert.Equal(t, want.Count, got.Count, name)
	}
}

// Every prefix of a page (a body cut anywhere: in a name, a string, an
// escape, a number, between members) gets the SDK's answer, and no panic.
func TestFastQueryDecodingTruncatedBodies(t *testing.T) {
	body := `{"Items":[{"s":{"S":"a\"b\u00e9c"},"n":{"N":"12.5"},"b":{"BOOL":false},"z":{"NULL":true},` +
		`"l":{"L":[{"S":"x"},{"B":"AAE="}]},"m":{"M":{"k":{"SS":["p","q"]}}},"ns":{"NS":["1","2"]}}],` +
		`"Count":17,"ScannedCount":230,"LastEvaluatedKey":{"pk":{"S":"t"}}}`
	_, ok := decodeQuery([]byte(body))
	require.True(t, ok, "the whole body is the fast decoding's")
	for n := range len(body) {
		sameAsSDK(t, http.StatusOK, []byte(body[:n]))
	}
}
