// AWS WAF in front of the stage: the part of a web ACL the gateway
// emulates.

package localgw

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// wafRule is a rule of the web ACL associated with the API's stage that
// the gateway applies before anything else, as WAF runs before API
// Gateway: a SizeConstraintStatement on one header, without text
// transformations, blocking with its custom response. Other statements
// (rate-based rules: their counts need time and many clients) are not
// emulated and let requests through.
type wafRule struct {
	name    string
	header  string
	op      string
	size    int
	status  int
	headers [][2]string
	body    string
	ctype   string
}

// wafContentTypes maps a custom response body's ContentType to its header.
var wafContentTypes = map[string]string{"APPLICATION_JSON": "application/json", "TEXT_PLAIN": "text/plain", "TEXT_HTML": "text/html"}

// parseWebACL returns the emulated rules of the web ACL that a
// WebACLAssociation of the template puts on restAPI's stage (its
// ResourceArn refers to the REST API), in priority order; none when no
// association refers to it or the ACL is not in the template (an ARN
// given as a literal).
func parseWebACL(t cfnTemplate, ids []string, restAPI string) ([]wafRule, error) {
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::WAFv2::WebACLAssociation" {
			continue
		}
		arn, _ := json.Marshal(r.Properties["ResourceArn"])
		if !strings.Contains(string(arn), fmt.Sprintf(`{"Ref":%q}`, restAPI)) {
			continue
		}
		att := asSlice(asMap(r.Properties["WebACLArn"])["Fn::GetAtt"])
		if len(att) != 2 {
			return nil, nil
		}
		aclID, _ := att[0].(string)
		acl, ok := t.Resources[aclID]
		if !ok || acl.Type != "AWS::WAFv2::WebACL" {
			return nil, fmt.Errorf("localgw: web ACL association %s: %q is not an AWS::WAFv2::WebACL of the template", id, aclID)
		}
		return parseRules(aclID, acl.Properties)
	}
	return nil, nil
}

func parseRules(aclID string, p map[string]any) ([]wafRule, error) {
	type prioritized struct {
		priority float64
		rule     wafRule
	}
	var rules []prioritized
	for _, raw := range asSlice(p["Rules"]) {
		rp := asMap(raw)
		sc := asMap(asMap(rp["Statement"])["SizeConstraintStatement"])
		if sc == nil {
			continue
		}
		name, _ := rp["Name"].(string)
		header, _ := asMap(asMap(sc["FieldToMatch"])["SingleHeader"])["Name"].(string)
		op, _ := sc["ComparisonOperator"].(string)
		size, _ := sc["Size"].(float64)
		if header == "" || op == "" {
			return nil, fmt.Errorf("localgw: web ACL %s rule %s: only a SizeConstraintStatement on a SingleHeader is emulated", aclID, name)
		}
		for _, tt := range asSlice(sc["TextTransformations"]) {
			if typ, _ := asMap(tt)["Type"].(string); typ != "NONE" {
				return nil, fmt.Errorf("localgw: web ACL %s rule %s: text transformation %q is not emulated (only NONE)", aclID, name, typ)
			}
		}
		block := asMap(asMap(rp["Action"])["Block"])
		if block == nil {
			continue // count or allow: nothing to answer
		}
		rule := wafRule{name: name, header: header, op: op, size: int(size), status: http.StatusForbidden, body: "", ctype: "text/plain"}
		if cr := asMap(block["CustomResponse"]); cr != nil {
			if code, ok := cr["ResponseCode"].(float64); ok {
				rule.status = int(code)
			}
			for _, h := range asSlice(cr["ResponseHeaders"]) {
				hn, _ := asMap(h)["Name"].(string)
				hv, _ := asMap(h)["Value"].(string)
				rule.headers = append(rule.headers, [2]string{hn, hv})
			}
			if key, _ := cr["CustomResponseBodyKey"].(string); key != "" {
				b := asMap(asMap(p["CustomResponseBodies"])[key])
				if b == nil {
					return nil, fmt.Errorf("localgw: web ACL %s rule %s: no custom response body %q", aclID, name, key)
				}
				rule.body, _ = b["Content"].(string)
				ct, _ := b["ContentType"].(string)
				rule.ctype = wafContentTypes[ct]
			}
		}
		pr, _ := rp["Priority"].(float64)
		rules = append(rules, prioritized{pr, rule})
	}
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].priority < rules[j].priority })
	out := make([]wafRule, len(rules))
	for i, r := range rules {
		out[i] = r.rule
	}
	return out, nil
}

// matches reports whether the request's header breaks the size
// constraint. A missing header matches nothing.
func (w wafRule) matches(h http.Header) bool {
	vs := h.Values(w.header)
	if len(vs) == 0 {
		return false
	}
	n := len(vs[0])
	switch w.op {
	case "GT":
		return n > w.size
	case "GE":
		return n >= w.size
	case "LT":
		return n < w.size
	case "LE":
		return n <= w.size
	case "EQ":
		return n == w.size
	case "NE":
		return n != w.size
	}
	return false
}

// blockedByWAF answers the request when a rule of the web ACL blocks it,
// as WAF does: its custom response, before API Gateway sees the request
// (no gateway response, no request id).
func (g *Gateway) blockedByWAF(w http.ResponseWriter, q *request) bool {
	if len(g.api.waf) == 0 {
		return false
	}
	h := q.r.Header
	if h.Get("Content-Length") == "" && q.r.ContentLength > 0 {
		// As sent on the wire (net/http keeps the header; a test's
		// request may carry the length alone).
		h = h.Clone()
		h.Set("Content-Length", fmt.Sprint(q.r.ContentLength))
	}
	for _, rule := range g.api.waf {
		if !rule.matches(h) {
			continue
		}
		q.errType, q.errMessage, q.status = "WAF", "blocked by web ACL rule "+rule.name, rule.status
		for _, kv := range rule.headers {
			w.Header().Set(kv[0], kv[1])
		}
		if rule.body != "" {
			w.Header().Set("Content-Type", rule.ctype)
		}
		w.WriteHeader(rule.status)
		_, _ = w.Write([]byte(rule.body))
		return true
	}
	return false
}
