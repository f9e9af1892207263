package localgw

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The emulated part of a web ACL: size constraints on one header, in
// priority order, with their custom responses; the ACL counts only when an
// association puts it on this REST API; what is not emulated is refused
// with a message, or (rate-based rules) let through.
func TestParseWebACL(t *testing.T) {
	tmpl := func(acl, assoc string) cfnTemplate {
		t.Helper()
		raw := `{"Resources":{"Api":{"Type":"AWS::ApiGateway::RestApi","Properties":{}},` +
			`"Acl":{"Type":"AWS::WAFv2::WebACL","Properties":` + acl + `},` +
			`"Assoc":{"Type":"AWS::WAFv2::WebACLAssociation","Properties":` + assoc + `}}}`
		var c cfnTemplate
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	const onApi = `{"ResourceArn":{"Fn::Join":["",["arn:aws:apigateway:us-east-1::/restapis/",{"Ref":"Api"},"/stages/live"]]},"WebACLArn":{"Fn::GetAtt":["Acl","Arn"]}}`
	acl := `{"CustomResponseBodies":{"big":{"ContentType":"APPLICATION_JSON","Content":"{\"x\":1}"}},"Rules":[` +
		`{"Name":"Rate","Priority":0,"Action":{"Block":{}},"Statement":{"RateBasedStatement":{"Limit":10,"AggregateKeyType":"IP"}}},` +
		`{"Name":"Second","Priority":2,"Action":{"Block":{}},"Statement":{"SizeConstraintStatement":{"FieldToMatch":{"SingleHeader":{"Name":"x-b"}},"ComparisonOperator":"LE","Size":1,"TextTransformations":[{"Priority":0,"Type":"NONE"}]}}},` +
		`{"Name":"First","Priority":1,"Action":{"Block":{"CustomResponse":{"ResponseCode":413,"CustomResponseBodyKey":"big","ResponseHeaders":[{"Name":"X-W","Value":"1"}]}}},"Statement":{"SizeConstraintStatement":{"FieldToMatch":{"SingleHeader":{"Name":"content-length"}},"ComparisonOperator":"GT","Size":6,"TextTransformations":[{"Priority":0,"Type":"NONE"}]}}},` +
		`{"Name":"Counted","Priority":3,"Action":{"Count":{}},"Statement":{"SizeConstraintStatement":{"FieldToMatch":{"SingleHeader":{"Name":"x-c"}},"ComparisonOperator":"GT","Size":0,"TextTransformations":[]}}}]}`
	t1 := tmpl(acl, onApi)
	rules, err := parseWebACL(t1, sortedKeys(t1.Resources), "Api")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].name != "First" || rules[1].name != "Second" {
		t.Fatalf("rules %+v, want First then Second (rate-based and count rules are not answered)", rules)
	}
	if r := rules[0]; r.status != 413 || r.body != `{"x":1}` || r.ctype != "application/json" || len(r.headers) != 1 || r.headers[0] != [2]string{"X-W", "1"} {
		t.Errorf("First's response: %+v", r)
	}
	if r := rules[1]; r.status != http.StatusForbidden || r.body != "" {
		t.Errorf("a block without a custom response is WAF's 403: %+v", r)
	}
	for _, c := range []struct {
		h    http.Header
		want bool
	}{
		{http.Header{"Content-Length": {"1000000"}}, true},
		{http.Header{"Content-Length": {"999999"}}, false},
		{http.Header{}, false},
	} {
		if got := rules[0].matches(c.h); got != c.want {
			t.Errorf("GT 6 on %v: %v, want %v", c.h, got, c.want)
		}
	}
	if !rules[1].matches(http.Header{"X-B": {"a"}}) || rules[1].matches(http.Header{"X-B": {"ab"}}) {
		t.Error("LE 1")
	}

	// Another API's association, or an ACL given by ARN: nothing applies.
	other := tmpl(acl, strings.ReplaceAll(onApi, `{"Ref":"Api"}`, `{"Ref":"Other"}`))
	if rules, err := parseWebACL(other, sortedKeys(other.Resources), "Api"); err != nil || rules != nil {
		t.Errorf("another API's ACL: %v %v", rules, err)
	}
	byArn := tmpl(acl, `{"ResourceArn":{"Ref":"Api"},"WebACLArn":"arn:aws:wafv2:us-east-1:1:regional/webacl/x/y"}`)
	if rules, err := parseWebACL(byArn, sortedKeys(byArn.Resources), "Api"); err != nil || rules != nil {
		t.Errorf("an ACL outside the template: %v %v", rules, err)
	}
	// A transformation that is not emulated is refused by name.
	lower := tmpl(strings.Replace(acl, `"Type":"NONE"}]}}},{"Name":"First"`, `"Type":"LOWERCASE"}]}}},{"Name":"First"`, 1), onApi)
	if _, err := parseWebACL(lower, sortedKeys(lower.Resources), "Api"); err == nil || !strings.Contains(err.Error(), `"LOWERCASE"`) {
		t.Errorf("LOWERCASE: %v", err)
	}
}
