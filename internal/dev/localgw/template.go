package localgw

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// cfnTemplate is the part of a CloudFormation template the gateway reads.
type cfnTemplate struct {
	Resources map[string]cfnResource `json:"Resources"`
}

type cfnResource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// api is the REST API model built from a template.
type api struct {
	logicalID        string
	stage            string
	stageVariables   map[string]string
	binaryMediaTypes []string
	root             *resource
	resources        map[string]*resource
	authorizers      map[string]*authorizer
	responses        map[string]*gatewayResponse
	functions        map[string]Function
	// aliases maps an AWS::Lambda::Alias (provisioned concurrency) to
	// the function it invokes.
	aliases  map[string]string
	throttle *throttleSettings
	// waf are the emulated rules of the web ACL on the stage (parseWebACL).
	waf []wafRule
}

type resource struct {
	logicalID string
	pathPart  string
	path      string
	parent    *resource
	literal   []*resource
	params    []*resource // {name}
	greedy    *resource   // {name+}
	methods   map[string]*method
}

// paramName returns "name" for "{name}" and "{name+}", or "".
func (r *resource) paramName() string {
	p := strings.TrimSuffix(strings.TrimPrefix(r.pathPart, "{"), "}")
	if p == r.pathPart {
		return ""
	}
	return strings.TrimSuffix(p, "+")
}

type method struct {
	logicalID  string
	httpMethod string
	resource   *resource
	authType   string
	authorizer *authorizer
	required   []requestParam
	validate   bool
	// integration
	integrationType string
	function        string // AWS_PROXY: logical id of the function
	mock            *mockIntegration
}

type requestParam struct {
	location string // header, querystring, path
	name     string
}

func (p requestParam) String() string { return p.name }

type mockIntegration struct {
	status    int
	headers   map[string]string // header name -> value expression
	templates map[string]string
}

type authorizer struct {
	logicalID string
	name      string
	sources   []identitySource
	ttl       time.Duration
	function  string
}

// identitySource is one comma-separated entry of an authorizer's
// IdentitySource: method.request.header.X, method.request.querystring.X,
// stageVariables.X or context.X.
type identitySource struct {
	raw      string
	location string // header, querystring, stageVariables, context
	name     string
}

type gatewayResponse struct {
	responseType string
	status       int // 0: not set
	headers      map[string]string
	templates    map[string]string
}

type throttleSettings struct {
	rate  float64
	burst float64
}

// parseTemplate builds the model of one REST API and its stage from a
// synthesized template.
func parseTemplate(raw []byte, restAPI, stage string) (*api, error) {
	var t cfnTemplate
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("localgw: the template is not JSON: %w", err)
	}
	if len(t.Resources) == 0 {
		return nil, fmt.Errorf("localgw: the template has no Resources")
	}
	ids := sortedKeys(t.Resources)

	// The REST API.
	if restAPI == "" {
		for _, id := range ids {
			if t.Resources[id].Type == "AWS::ApiGateway::RestApi" {
				if restAPI != "" {
					return nil, fmt.Errorf("localgw: the template has several AWS::ApiGateway::RestApi (%s, %s): set Options.RestAPI to one logical id", restAPI, id)
				}
				restAPI = id
			}
		}
		if restAPI == "" {
			return nil, fmt.Errorf("localgw: the template has no AWS::ApiGateway::RestApi")
		}
	} else if t.Resources[restAPI].Type != "AWS::ApiGateway::RestApi" {
		return nil, fmt.Errorf("localgw: Options.RestAPI %q is not an AWS::ApiGateway::RestApi of the template", restAPI)
	}
	a := &api{
		logicalID:   restAPI,
		resources:   map[string]*resource{},
		authorizers: map[string]*authorizer{},
		responses:   map[string]*gatewayResponse{},
		functions:   map[string]Function{},
		aliases:     map[string]string{},
		root:        &resource{logicalID: restAPI + ".RootResourceId", path: "/", methods: map[string]*method{}},
	}
	apiProps := t.Resources[restAPI].Properties
	if _, ok := apiProps["Body"]; ok {
		return nil, fmt.Errorf("localgw: RestApi %s is defined by an OpenAPI Body; only AWS::ApiGateway::Resource/Method definitions are emulated", restAPI)
	}
	if _, ok := apiProps["BodyS3Location"]; ok {
		return nil, fmt.Errorf("localgw: RestApi %s is defined by an OpenAPI BodyS3Location; only AWS::ApiGateway::Resource/Method definitions are emulated", restAPI)
	}
	for _, v := range asSlice(apiProps["BinaryMediaTypes"]) {
		if s, ok := v.(string); ok {
			a.binaryMediaTypes = append(a.binaryMediaTypes, strings.ReplaceAll(s, "~1", "/"))
		}
	}
	belongs := func(p map[string]any) bool {
		id, ok := refOf(p["RestApiId"])
		return ok && id == restAPI
	}

	// Functions: every AWS::Lambda::Function, resolved lazily by use.
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		fn := Function{LogicalID: id, Properties: r.Properties, Timeout: 3 * time.Second}
		fn.Description, _ = r.Properties["Description"].(string)
		if env, ok := r.Properties["Environment"].(map[string]any); ok {
			if vars, ok := env["Variables"].(map[string]any); ok {
				fn.Environment = vars
			}
		}
		if n, ok := r.Properties["Timeout"].(float64); ok && n > 0 {
			fn.Timeout = time.Duration(n * float64(time.Second))
		}
		a.functions[id] = fn
	}
	// Aliases: invoking one runs the function it names (its version is
	// the function's code, as deployed).
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::Lambda::Alias" {
			continue
		}
		if fid, ok := refOf(r.Properties["FunctionName"]); ok {
			if _, isFn := a.functions[fid]; isFn {
				a.aliases[id] = fid
			}
		}
	}

	// Stage.
	if err := a.parseStage(t, ids, belongs, stage); err != nil {
		return nil, err
	}

	// Resources.
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::ApiGateway::Resource" || !belongs(r.Properties) {
			continue
		}
		part, _ := r.Properties["PathPart"].(string)
		if part == "" {
			return nil, fmt.Errorf("localgw: resource %s has no literal PathPart", id)
		}
		a.resources[id] = &resource{logicalID: id, pathPart: part, methods: map[string]*method{}}
	}
	for _, id := range sortedKeys(a.resources) {
		r := a.resources[id]
		parent, err := a.resourceRef(t.Resources[id].Properties["ParentId"])
		if err != nil {
			return nil, fmt.Errorf("localgw: resource %s: ParentId: %w", id, err)
		}
		r.parent = parent
		switch name := r.paramName(); {
		case name == "":
			parent.literal = append(parent.literal, r)
		case strings.HasSuffix(r.pathPart, "+}"):
			if parent.greedy != nil {
				return nil, fmt.Errorf("localgw: resources %s and %s are both greedy children of %s", parent.greedy.logicalID, id, parent.logicalID)
			}
			parent.greedy = r
		default:
			parent.params = append(parent.params, r)
		}
	}
	// A cycle of resources cannot hang this walk: it starts at the root,
	// which has no parent, so no cycle is reachable from it; the
	// resources of a cycle are reported as unreachable below.
	var setPaths func(r *resource)
	setPaths = func(r *resource) {
		for _, c := range r.children() {
			c.path = strings.TrimSuffix(r.path, "/") + "/" + c.pathPart
			setPaths(c)
		}
	}
	setPaths(a.root)
	for id, r := range a.resources {
		if r.path == "" {
			return nil, fmt.Errorf("localgw: resource %s is not reachable from the API's root", id)
		}
	}

	// Authorizers.
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::ApiGateway::Authorizer" || !belongs(r.Properties) {
			continue
		}
		au, err := a.parseAuthorizer(id, r.Properties)
		if err != nil {
			return nil, err
		}
		a.authorizers[id] = au
	}

	// Request validators.
	validators := map[string]bool{}
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type == "AWS::ApiGateway::RequestValidator" && belongs(r.Properties) {
			v, _ := r.Properties["ValidateRequestParameters"].(bool)
			validators[id] = v
		}
	}

	// Methods.
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::ApiGateway::Method" || !belongs(r.Properties) {
			continue
		}
		m, err := a.parseMethod(id, r.Properties, validators)
		if err != nil {
			return nil, err
		}
		if prev := m.resource.methods[m.httpMethod]; prev != nil {
			return nil, fmt.Errorf("localgw: methods %s and %s are both %s %s", prev.logicalID, id, m.httpMethod, m.resource.path)
		}
		m.resource.methods[m.httpMethod] = m
	}

	// Gateway responses.
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::ApiGateway::GatewayResponse" || !belongs(r.Properties) {
			continue
		}
		g := &gatewayResponse{headers: map[string]string{}, templates: map[string]string{}}
		g.responseType, _ = r.Properties["ResponseType"].(string)
		if g.responseType == "" {
			return nil, fmt.Errorf("localgw: gateway response %s has no ResponseType", id)
		}
		if s, ok := r.Properties["StatusCode"].(string); ok && s != "" {
			n, err := parseStatus(s)
			if err != nil {
				return nil, fmt.Errorf("localgw: gateway response %s: StatusCode: %w", id, err)
			}
			g.status = n
		}
		for k, v := range asMap(r.Properties["ResponseParameters"]) {
			name, ok := strings.CutPrefix(k, "gatewayresponse.header.")
			s, isStr := v.(string)
			if !ok || !isStr {
				return nil, fmt.Errorf("localgw: gateway response %s: ResponseParameters %q: want gatewayresponse.header.<name> with a string value", id, k)
			}
			g.headers[name] = s
		}
		for k, v := range asMap(r.Properties["ResponseTemplates"]) {
			if s, ok := v.(string); ok {
				g.templates[k] = s
			}
		}
		a.responses[g.responseType] = g
	}
	waf, err := parseWebACL(t, ids, restAPI)
	if err != nil {
		return nil, err
	}
	a.waf = waf
	return a, nil
}

// children lists r's child resources: literal, {param}, then {greedy+}.
func (r *resource) children() []*resource {
	c := append(append([]*resource{}, r.literal...), r.params...)
	if r.greedy != nil {
		c = append(c, r.greedy)
	}
	return c
}

func (a *api) parseStage(t cfnTemplate, ids []string, belongs func(map[string]any) bool, want string) error {
	type stageDef struct {
		name  string
		props map[string]any
	}
	var stages []stageDef
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type == "AWS::ApiGateway::Stage" && belongs(r.Properties) {
			name, _ := r.Properties["StageName"].(string)
			stages = append(stages, stageDef{name, r.Properties})
		}
	}
	if len(stages) == 0 {
		// A deployment can create its stage itself.
		for _, id := range ids {
			r := t.Resources[id]
			if r.Type == "AWS::ApiGateway::Deployment" && belongs(r.Properties) {
				if name, _ := r.Properties["StageName"].(string); name != "" {
					desc, _ := r.Properties["StageDescription"].(map[string]any)
					stages = append(stages, stageDef{name, desc})
				}
			}
		}
	}
	var chosen *stageDef
	for i := range stages {
		if stages[i].name == "" {
			return fmt.Errorf("localgw: a stage of %s has no literal StageName", a.logicalID)
		}
		if want == "" || stages[i].name == want {
			if chosen != nil && want == "" {
				return fmt.Errorf("localgw: %s has several stages (%s, %s): set Options.Stage", a.logicalID, chosen.name, stages[i].name)
			}
			chosen = &stages[i]
		}
	}
	if chosen == nil {
		if want != "" {
			return fmt.Errorf("localgw: %s has no stage %q", a.logicalID, want)
		}
		return fmt.Errorf("localgw: %s has no stage (AWS::ApiGateway::Stage or a Deployment's StageName)", a.logicalID)
	}
	a.stage = chosen.name
	a.stageVariables = map[string]string{}
	for k, v := range asMap(chosen.props["Variables"]) {
		if s, ok := v.(string); ok {
			a.stageVariables[k] = s
		}
	}
	// Stage-wide throttling: a method setting for every resource and method
	// (CDK's StageOptions), or a Deployment's StageDescription.
	for _, ms := range asSlice(chosen.props["MethodSettings"]) {
		m := asMap(ms)
		if m["HttpMethod"] == "*" && m["ResourcePath"] == "/*" {
			rate, _ := m["ThrottlingRateLimit"].(float64)
			burst, _ := m["ThrottlingBurstLimit"].(float64)
			if rate > 0 || burst > 0 {
				a.throttle = &throttleSettings{rate: rate, burst: burst}
			}
		}
	}
	if a.throttle == nil {
		rate, _ := chosen.props["ThrottlingRateLimit"].(float64)
		burst, _ := chosen.props["ThrottlingBurstLimit"].(float64)
		if rate > 0 || burst > 0 {
			a.throttle = &throttleSettings{rate: rate, burst: burst}
		}
	}
	return nil
}

func (a *api) parseAuthorizer(id string, p map[string]any) (*authorizer, error) {
	typ, _ := p["Type"].(string)
	if typ != "REQUEST" {
		return nil, fmt.Errorf("localgw: authorizer %s: Type %q is not emulated (only REQUEST)", id, typ)
	}
	au := &authorizer{logicalID: id, ttl: 300 * time.Second}
	au.name, _ = p["Name"].(string)
	if v, ok := p["AuthorizerResultTtlInSeconds"]; ok {
		n, isNum := v.(float64)
		if !isNum || n < 0 || n > 3600 || n != math.Trunc(n) {
			return nil, fmt.Errorf("localgw: authorizer %s: AuthorizerResultTtlInSeconds %v: want a whole number of seconds from 0 to 3600", id, v)
		}
		au.ttl = time.Duration(n) * time.Second
	}
	if s, ok := p["IdentitySource"].(string); ok && strings.TrimSpace(s) != "" {
		for _, part := range strings.Split(s, ",") {
			src, err := parseIdentitySource(strings.TrimSpace(part))
			if err != nil {
				return nil, fmt.Errorf("localgw: authorizer %s: IdentitySource: %w", id, err)
			}
			au.sources = append(au.sources, src)
		}
	}
	if au.ttl > 0 && len(au.sources) == 0 {
		return nil, fmt.Errorf("localgw: authorizer %s: caching is on (TTL %s) but there is no IdentitySource; API Gateway refuses this too", id, au.ttl)
	}
	fn, err := a.functionIn(p["AuthorizerUri"])
	if err != nil {
		return nil, fmt.Errorf("localgw: authorizer %s: AuthorizerUri: %w", id, err)
	}
	au.function = fn
	return au, nil
}

func parseIdentitySource(s string) (identitySource, error) {
	for _, loc := range []struct{ prefix, location string }{
		{"method.request.header.", "header"},
		{"method.request.querystring.", "querystring"},
		{"stageVariables.", "stageVariables"},
		{"context.", "context"},
	} {
		if name, ok := strings.CutPrefix(s, loc.prefix); ok && name != "" {
			return identitySource{raw: s, location: loc.location, name: name}, nil
		}
	}
	return identitySource{}, fmt.Errorf("%q: want method.request.header.<name>, method.request.querystring.<name>, stageVariables.<name> or context.<name>", s)
}

func (a *api) parseMethod(id string, p map[string]any, validators map[string]bool) (*method, error) {
	m := &method{logicalID: id}
	m.httpMethod, _ = p["HttpMethod"].(string)
	m.httpMethod = strings.ToUpper(m.httpMethod)
	if m.httpMethod == "" {
		return nil, fmt.Errorf("localgw: method %s has no HttpMethod", id)
	}
	res, err := a.resourceRef(p["ResourceId"])
	if err != nil {
		return nil, fmt.Errorf("localgw: method %s: ResourceId: %w", id, err)
	}
	m.resource = res
	m.authType, _ = p["AuthorizationType"].(string)
	switch m.authType {
	case "", "NONE":
		m.authType = "NONE"
	case "CUSTOM":
		aid, ok := refOf(p["AuthorizerId"])
		if !ok || a.authorizers[aid] == nil {
			return nil, fmt.Errorf("localgw: method %s: AuthorizerId %v is not an authorizer of this API", id, p["AuthorizerId"])
		}
		m.authorizer = a.authorizers[aid]
	default:
		return nil, fmt.Errorf("localgw: method %s: AuthorizationType %s is not emulated (NONE and CUSTOM are)", id, m.authType)
	}
	if b, _ := p["ApiKeyRequired"].(bool); b {
		return nil, fmt.Errorf("localgw: method %s: ApiKeyRequired (usage plans) is not emulated", id)
	}
	if v, ok := p["RequestValidatorId"]; ok {
		vid, isRef := refOf(v)
		validate, known := validators[vid]
		if !isRef || !known {
			return nil, fmt.Errorf("localgw: method %s: RequestValidatorId %v is not a request validator of this API", id, v)
		}
		m.validate = validate
	}
	for k, v := range asMap(p["RequestParameters"]) {
		req, _ := v.(bool)
		if !req {
			continue
		}
		var loc, name string
		for _, l := range []string{"header", "querystring", "path"} {
			if n, ok := strings.CutPrefix(k, "method.request."+l+"."); ok {
				loc, name = l, n
			}
		}
		if loc == "" {
			return nil, fmt.Errorf("localgw: method %s: RequestParameters %q: want method.request.{header,querystring,path}.<name>", id, k)
		}
		m.required = append(m.required, requestParam{loc, name})
	}
	sort.Slice(m.required, func(i, j int) bool { return m.required[i].name < m.required[j].name })

	integ := asMap(p["Integration"])
	m.integrationType, _ = integ["Type"].(string)
	switch m.integrationType {
	case "AWS_PROXY":
		fn, err := a.functionIn(integ["Uri"])
		if err != nil {
			return nil, fmt.Errorf("localgw: method %s: Integration.Uri: %w", id, err)
		}
		m.function = fn
	case "MOCK":
		mock := &mockIntegration{status: 200, headers: map[string]string{}, templates: map[string]string{}}
		for _, ir := range asSlice(integ["IntegrationResponses"]) {
			irm := asMap(ir)
			if sp, _ := irm["SelectionPattern"].(string); sp != "" {
				continue // only the default response is emulated
			}
			if s, ok := irm["StatusCode"].(string); ok {
				n, err := parseStatus(s)
				if err != nil {
					return nil, fmt.Errorf("localgw: method %s: integration response StatusCode: %w", id, err)
				}
				mock.status = n
			}
			for k, v := range asMap(irm["ResponseParameters"]) {
				if name, ok := strings.CutPrefix(k, "method.response.header."); ok {
					if s, ok := v.(string); ok {
						mock.headers[name] = s
					}
				}
			}
			for k, v := range asMap(irm["ResponseTemplates"]) {
				if s, ok := v.(string); ok {
					mock.templates[k] = s
				}
			}
			break
		}
		m.mock = mock
	default:
		return nil, fmt.Errorf("localgw: method %s: Integration.Type %q is not emulated (AWS_PROXY and MOCK are)", id, m.integrationType)
	}
	return m, nil
}

// resourceRef resolves a ParentId or ResourceId: {"Ref": resource} or
// {"Fn::GetAtt": [restApi, "RootResourceId"]}.
func (a *api) resourceRef(v any) (*resource, error) {
	if id, attr, ok := getAttOf(v); ok && id == a.logicalID && attr == "RootResourceId" {
		return a.root, nil
	}
	if id, ok := refOf(v); ok {
		if r := a.resources[id]; r != nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%v is neither the API's RootResourceId nor a Ref to one of its resources", v)
}

// functionIn finds the one AWS::Lambda::Function whose Arn an expression
// (an Fn::Join of an integration or authorizer URI) uses, directly or
// through a Ref to one of its aliases.
func (a *api) functionIn(v any) (string, error) {
	found := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if id, attr, ok := getAttOf(x); ok && attr == "Arn" {
				if _, isFn := a.functions[id]; isFn {
					found[id] = true
				}
			}
			if id, ok := refOf(x); ok {
				if fid, isAlias := a.aliases[id]; isAlias {
					found[fid] = true
				}
			}
			for _, k := range sortedKeys(x) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	switch len(found) {
	case 1:
		for id := range found {
			return id, nil
		}
	case 0:
		return "", fmt.Errorf("%v uses the Arn of no AWS::Lambda::Function of this template", compact(v))
	}
	return "", fmt.Errorf("%v uses the Arn of several functions (%s)", compact(v), strings.Join(sortedKeys(found), ", "))
}

func refOf(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	s, ok := m["Ref"].(string)
	return s, ok
}

func getAttOf(v any) (id, attr string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", "", false
	}
	switch x := m["Fn::GetAtt"].(type) {
	case []any:
		if len(x) == 2 {
			id, ok1 := x[0].(string)
			attr, ok2 := x[1].(string)
			return id, attr, ok1 && ok2
		}
	case string:
		id, attr, found := strings.Cut(x, ".")
		return id, attr, found
	}
	return "", "", false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func parseStatus(s string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 100 || n > 599 || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("%q is not an HTTP status code", s)
	}
	return n, nil
}
