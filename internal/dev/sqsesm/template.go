package sqsesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Defaults CloudFormation and Lambda apply when a template leaves a
// property out.
const (
	DefaultBatchSize              = 10
	DefaultVisibilityTimeout      = 30 * time.Second
	DefaultMessageRetentionPeriod = 4 * 24 * time.Hour
	DefaultFunctionTimeout        = 3 * time.Second
)

// Template is what a synthesized CloudFormation template says about SQS
// event sources: its queues, the functions that consume them, and the
// event source mappings between the two.
type Template struct {
	// Queues are the template's AWS::SQS::Queue resources by logical id.
	Queues map[string]Queue
	// Functions are its AWS::Lambda::Function resources by logical id
	// (those whose Timeout or ReservedConcurrentExecutions is not a
	// literal are left out unless a mapping invokes them, which is then
	// an error).
	Functions map[string]Function
	// Mappings are its AWS::Lambda::EventSourceMapping resources whose
	// source is one of Queues, sorted by logical id. Mappings on other
	// sources (DynamoDB or Kinesis streams, Kafka) are left out.
	Mappings []Mapping
}

// Queue is an AWS::SQS::Queue with the attributes a consumer sees.
type Queue struct {
	// LogicalID is the queue's logical id in the template.
	LogicalID string
	// VisibilityTimeout (default DefaultVisibilityTimeout).
	VisibilityTimeout time.Duration
	// Delay is DelaySeconds (default 0).
	Delay time.Duration
	// MessageRetentionPeriod (default DefaultMessageRetentionPeriod).
	MessageRetentionPeriod time.Duration
	// MaximumMessageSize in bytes; 0 leaves the engine's default.
	MaximumMessageSize int
	// ReceiveMessageWaitTime is ReceiveMessageWaitTimeSeconds (default 0).
	ReceiveMessageWaitTime time.Duration
	// Redrive is the RedrivePolicy; nil when the queue has none.
	Redrive *Redrive
}

// Redrive is a queue's RedrivePolicy.
type Redrive struct {
	// DeadLetterQueue is the logical id of the dead-letter queue, a
	// queue of the same template.
	DeadLetterQueue string
	// MaxReceiveCount is maxReceiveCount: the receives after which the
	// next one moves the message to DeadLetterQueue.
	MaxReceiveCount int
}

// Function is the AWS::Lambda::Function a mapping invokes.
type Function struct {
	// LogicalID is the function's logical id in the template.
	LogicalID string
	// Timeout is the function timeout (default DefaultFunctionTimeout).
	Timeout time.Duration
	// ReservedConcurrency is ReservedConcurrentExecutions; 0 when unset.
	ReservedConcurrency int
	// Env is Properties.Environment.Variables as written in the
	// template: literal strings, or intrinsic functions (maps) that only
	// resolve on deployment (see Environment).
	Env map[string]any
}

// Mapping is an AWS::Lambda::EventSourceMapping from an SQS queue of the
// template to a function of the template.
type Mapping struct {
	// LogicalID is the mapping's logical id in the template.
	LogicalID string
	// Enabled is false when the template disables the mapping.
	Enabled bool
	// Queue is the source queue.
	Queue Queue
	// Function is the function it invokes.
	Function Function
	// Settings are the mapping's batching, concurrency and response
	// settings, with the function's timeout.
	Settings Settings
}

// ReadTemplate reads and parses the template at path.
func ReadTemplate(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sqsesm: the template %s does not exist: run make synth, or give the path of a synthesized template", path)
	}
	if err != nil {
		return nil, fmt.Errorf("sqsesm: read the template: %w", err)
	}
	t, err := ParseTemplate(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// cfnTemplate is the part of a CloudFormation template the loader reads.
type cfnTemplate struct {
	Resources map[string]cfnResource `json:"Resources"`
}

type cfnResource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// ParseTemplate reads the SQS queues and their event source mappings from
// a synthesized template (JSON). A property that only resolves on
// deployment (a Ref to a parameter, an import) where a value is needed is
// an error naming the resource and the property, and so is a value out of
// the range CloudFormation accepts.
func ParseTemplate(raw []byte) (*Template, error) {
	var t cfnTemplate
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("sqsesm: the template is not JSON: %w", err)
	}
	if len(t.Resources) == 0 {
		return nil, errors.New("sqsesm: the template has no Resources")
	}
	ids := make([]string, 0, len(t.Resources))
	for id := range t.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := &Template{Queues: map[string]Queue{}, Functions: map[string]Function{}}
	for _, id := range ids {
		if t.Resources[id].Type == "AWS::Lambda::Function" {
			if fn, err := parseFunction(id, t.Resources[id].Properties); err == nil {
				out.Functions[id] = fn
			}
			continue
		}
		if t.Resources[id].Type != "AWS::SQS::Queue" {
			continue
		}
		q, err := parseQueue(id, t.Resources[id].Properties, t.Resources)
		if err != nil {
			return nil, err
		}
		out.Queues[id] = q
	}
	for _, id := range ids {
		r := t.Resources[id]
		if r.Type != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		m, ok, err := parseMapping(id, r.Properties, t.Resources, out.Queues)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Mappings = append(out.Mappings, m)
		}
	}
	return out, nil
}

func parseQueue(id string, p map[string]any, all map[string]cfnResource) (Queue, error) {
	q := Queue{LogicalID: id, VisibilityTimeout: DefaultVisibilityTimeout, MessageRetentionPeriod: DefaultMessageRetentionPeriod}
	bad := func(format string, args ...any) (Queue, error) {
		return Queue{}, fmt.Errorf("sqsesm: queue %s: "+format, append([]any{id}, args...)...)
	}
	if fifo, _ := p["FifoQueue"].(bool); fifo {
		return bad("FIFO queues are not emulated (only standard queues)")
	}
	secs := func(name string, lo, hi int, dst *time.Duration) error {
		v, ok := p[name]
		if !ok {
			return nil
		}
		n, err := wholeNumber(v, lo, hi)
		if err != nil {
			return fmt.Errorf("sqsesm: queue %s: %s: %w", id, name, err)
		}
		*dst = time.Duration(n) * time.Second
		return nil
	}
	for _, f := range []struct {
		name   string
		lo, hi int
		dst    *time.Duration
	}{
		{"VisibilityTimeout", 0, 43200, &q.VisibilityTimeout},
		{"DelaySeconds", 0, 900, &q.Delay},
		{"MessageRetentionPeriod", 60, 1209600, &q.MessageRetentionPeriod},
		{"ReceiveMessageWaitTimeSeconds", 0, 20, &q.ReceiveMessageWaitTime},
	} {
		if err := secs(f.name, f.lo, f.hi, f.dst); err != nil {
			return Queue{}, err
		}
	}
	if v, ok := p["MaximumMessageSize"]; ok {
		n, err := wholeNumber(v, 1024, 1048576)
		if err != nil {
			return bad("MaximumMessageSize: %v", err)
		}
		q.MaximumMessageSize = n
	}
	if v, ok := p["RedrivePolicy"]; ok {
		rp := asMap(v)
		if s, isString := v.(string); isString {
			if err := json.Unmarshal([]byte(s), &rp); err != nil {
				return bad("RedrivePolicy %q is not JSON: %v", s, err)
			}
		}
		if rp == nil {
			return bad("RedrivePolicy %s: want an object with deadLetterTargetArn and maxReceiveCount", compact(v))
		}
		dlq, attr, isGetAtt := getAttOf(rp["deadLetterTargetArn"])
		if !isGetAtt || attr != "Arn" || all[dlq].Type != "AWS::SQS::Queue" {
			return bad("RedrivePolicy.deadLetterTargetArn %s: want {\"Fn::GetAtt\": [<a queue of this template>, \"Arn\"]}", compact(rp["deadLetterTargetArn"]))
		}
		n, err := wholeNumber(rp["maxReceiveCount"], 1, 1000)
		if err != nil {
			return bad("RedrivePolicy.maxReceiveCount: %v", err)
		}
		q.Redrive = &Redrive{DeadLetterQueue: dlq, MaxReceiveCount: n}
	}
	return q, nil
}

// parseMapping returns the mapping, or ok false when its source is not a
// queue (a stream, Kafka...).
func parseMapping(id string, p map[string]any, all map[string]cfnResource, queues map[string]Queue) (m Mapping, ok bool, err error) {
	bad := func(format string, args ...any) (Mapping, bool, error) {
		return Mapping{}, false, fmt.Errorf("sqsesm: event source mapping %s: "+format, append([]any{id}, args...)...)
	}
	src := p["EventSourceArn"]
	qid, attr, isGetAtt := getAttOf(src)
	switch {
	case isGetAtt && all[qid].Type == "AWS::SQS::Queue" && attr == "Arn":
	case isGetAtt && all[qid].Type == "AWS::SQS::Queue":
		return bad("EventSourceArn %s: want the queue's Arn attribute", compact(src))
	default:
		if s, isString := src.(string); isString && strings.HasPrefix(s, "arn:") && strings.Contains(s, ":sqs:") {
			return bad("EventSourceArn %s is a queue outside this template: only the template's own queues can be run locally", s)
		}
		return Mapping{}, false, nil // not an SQS source
	}
	m = Mapping{LogicalID: id, Enabled: true, Queue: queues[qid]}
	if v, has := p["Enabled"]; has {
		b, isBool := v.(bool)
		if !isBool {
			return bad("Enabled %s: want true or false", compact(v))
		}
		m.Enabled = b
	}
	fid, isRef := refOf(p["FunctionName"])
	if !isRef {
		var a string
		fid, a, isGetAtt = getAttOf(p["FunctionName"])
		isRef = isGetAtt && a == "Arn"
	}
	if isRef && all[fid].Type == "AWS::Lambda::Alias" {
		// An alias (provisioned concurrency) runs the function it names.
		fid, isRef = refOf(all[fid].Properties["FunctionName"])
	}
	if !isRef || all[fid].Type != "AWS::Lambda::Function" {
		return bad("FunctionName %s: want a Ref (or Fn::GetAtt Arn) to a function of this template, or to one of its aliases", compact(p["FunctionName"]))
	}
	fn, err := parseFunction(fid, all[fid].Properties)
	if err != nil {
		return Mapping{}, false, err
	}
	m.Function = fn
	s := Settings{BatchSize: DefaultBatchSize, FunctionTimeout: fn.Timeout}
	if v, has := p["BatchSize"]; has {
		if s.BatchSize, err = wholeNumber(v, 1, 10000); err != nil {
			return bad("BatchSize: %v", err)
		}
	}
	if v, has := p["MaximumBatchingWindowInSeconds"]; has {
		n, err := wholeNumber(v, 0, 300)
		if err != nil {
			return bad("MaximumBatchingWindowInSeconds: %v", err)
		}
		s.MaximumBatchingWindow = time.Duration(n) * time.Second
	}
	if s.BatchSize > 10 && s.MaximumBatchingWindow == 0 {
		return bad("BatchSize %d is over 10 with no MaximumBatchingWindowInSeconds: Lambda requires a batching window of at least 1 second for that", s.BatchSize)
	}
	if v, has := p["FunctionResponseTypes"]; has {
		list, isList := v.([]any)
		if !isList {
			return bad("FunctionResponseTypes %s: want a list", compact(v))
		}
		for _, e := range list {
			if e != "ReportBatchItemFailures" {
				return bad("FunctionResponseTypes: %s is not ReportBatchItemFailures", compact(e))
			}
			s.ReportBatchItemFailures = true
		}
	}
	if sc, has := p["ScalingConfig"]; has {
		if v, set := asMap(sc)["MaximumConcurrency"]; set {
			if s.MaximumConcurrency, err = wholeNumber(v, 2, 1000); err != nil {
				return bad("ScalingConfig.MaximumConcurrency: %v", err)
			}
		}
	}
	if _, has := p["FilterCriteria"]; has {
		return bad("FilterCriteria on an SQS source is not emulated")
	}
	if m.Queue.VisibilityTimeout < fn.Timeout {
		return bad("queue %s's visibility timeout %s is less than function %s's timeout %s: Lambda refuses this mapping; raise the queue's VisibilityTimeout (AWS advises 6 x the function timeout)",
			m.Queue.LogicalID, m.Queue.VisibilityTimeout, fn.LogicalID, fn.Timeout)
	}
	m.Settings = s
	return m, true, nil
}

func parseFunction(id string, p map[string]any) (Function, error) {
	fn := Function{LogicalID: id, Timeout: DefaultFunctionTimeout, Env: asMap(asMap(p["Environment"])["Variables"])}
	if v, ok := p["Timeout"]; ok {
		n, err := wholeNumber(v, 1, 900)
		if err != nil {
			return Function{}, fmt.Errorf("sqsesm: function %s: Timeout: %w", id, err)
		}
		fn.Timeout = time.Duration(n) * time.Second
	}
	if v, ok := p["ReservedConcurrentExecutions"]; ok {
		n, err := wholeNumber(v, 0, math.MaxInt32)
		if err != nil {
			return Function{}, fmt.Errorf("sqsesm: function %s: ReservedConcurrentExecutions: %w", id, err)
		}
		fn.ReservedConcurrency = n
	}
	return fn, nil
}

// wholeNumber reads a CloudFormation integer: a JSON number or a string
// of digits, from lo to hi.
func wholeNumber(v any, lo, hi int) (int, error) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", x)
		}
		f = float64(n)
	case nil:
		return 0, fmt.Errorf("missing: want a whole number from %d to %d", lo, hi)
	default:
		return 0, fmt.Errorf("%s only resolves on deployment: want a literal whole number from %d to %d", compact(v), lo, hi)
	}
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, fmt.Errorf("%v: want a whole number from %d to %d", f, lo, hi)
	}
	return int(f), nil
}

func refOf(v any) (string, bool) {
	s, ok := asMap(v)["Ref"].(string)
	return s, ok
}

// getAttOf reads {"Fn::GetAtt": [id, attr]} or {"Fn::GetAtt": "id.attr"}.
func getAttOf(v any) (id, attr string, ok bool) {
	switch x := asMap(v)["Fn::GetAtt"].(type) {
	case []any:
		if len(x) == 2 {
			id, _ = x[0].(string)
			attr, _ = x[1].(string)
		}
	case string:
		id, attr, _ = strings.Cut(x, ".")
	}
	return id, attr, id != "" && attr != ""
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// QueueAPI is the part of the SQS client CreateQueues uses.
type QueueAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// LocalQueue is a template queue created on a local engine.
type LocalQueue struct {
	// Name, URL and ARN of the queue on the engine.
	Name, URL, ARN string
}

var nameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// QueueName is the name CreateQueues gives the queue with logical id id:
// prefix + id, in the characters and the 80-character length SQS allows.
func QueueName(prefix, id string) string {
	n := nameChars.ReplaceAllString(prefix+id, "-")
	if len(n) > 80 {
		n = n[:80]
	}
	return n
}

// CreateQueues creates every queue of the template on the engine behind
// client, dead-letter queues before the queues that redrive to them, with
// the template's VisibilityTimeout, DelaySeconds, MessageRetentionPeriod,
// MaximumMessageSize, ReceiveMessageWaitTimeSeconds and RedrivePolicy
// (the dead-letter queue's local ARN, the same maxReceiveCount). Names are
// QueueName(prefix, logical id). A queue that already exists with the
// same attributes is reused, as SQS does; encryption settings are not
// applied. It returns the queues by logical id.
func (t *Template) CreateQueues(ctx context.Context, client QueueAPI, prefix string) (map[string]LocalQueue, error) {
	out := map[string]LocalQueue{}
	var create func(id string, depth int) error
	create = func(id string, depth int) error {
		if _, done := out[id]; done {
			return nil
		}
		q, ok := t.Queues[id]
		if !ok {
			return fmt.Errorf("sqsesm: queue %s is not in the template", id)
		}
		if depth > len(t.Queues) {
			return fmt.Errorf("sqsesm: queue %s: the redrive policies form a cycle", id)
		}
		attrs := map[string]string{
			"VisibilityTimeout":      strconv.Itoa(int(q.VisibilityTimeout / time.Second)),
			"DelaySeconds":           strconv.Itoa(int(q.Delay / time.Second)),
			"MessageRetentionPeriod": strconv.Itoa(int(q.MessageRetentionPeriod / time.Second)),
		}
		if q.MaximumMessageSize > 0 {
			attrs["MaximumMessageSize"] = strconv.Itoa(q.MaximumMessageSize)
		}
		if q.ReceiveMessageWaitTime > 0 {
			attrs["ReceiveMessageWaitTimeSeconds"] = strconv.Itoa(int(q.ReceiveMessageWaitTime / time.Second))
		}
		if q.Redrive != nil {
			if err := create(q.Redrive.DeadLetterQueue, depth+1); err != nil {
				return err
			}
			rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": out[q.Redrive.DeadLetterQueue].ARN, "maxReceiveCount": q.Redrive.MaxReceiveCount})
			attrs["RedrivePolicy"] = string(rp)
		}
		name := QueueName(prefix, id)
		res, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return fmt.Errorf("sqsesm: create queue %s (%s): %w", name, id, err)
		}
		url := aws.ToString(res.QueueUrl)
		got, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: res.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("sqsesm: queue %s: read its ARN: %w", name, err)
		}
		out[id] = LocalQueue{Name: name, URL: url, ARN: got.Attributes[string(types.QueueAttributeNameQueueArn)]}
		return nil
	}
	ids := make([]string, 0, len(t.Queues))
	for id := range t.Queues {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := create(id, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Environment returns a getenv over fn's environment in the template as
// it would resolve with the template's queues made by CreateQueues: a
// literal string as it is; a Ref to a queue (its URL) or an Fn::GetAtt of
// its Arn, QueueName or QueueUrl as the local queue's; a name in override
// as override says (overriding the template). Any other intrinsic function
// only resolves on deployment: an error names every such variable.
func (fn Function) Environment(queues map[string]LocalQueue, override map[string]string) (func(string) string, error) {
	env := map[string]string{}
	var unresolved []string
	for k, v := range fn.Env {
		if _, ok := override[k]; ok {
			continue
		}
		if s, ok := v.(string); ok {
			env[k] = s
			continue
		}
		if id, ok := refOf(v); ok {
			if q, known := queues[id]; known {
				env[k] = q.URL
				continue
			}
		}
		if id, attr, ok := getAttOf(v); ok {
			if q, known := queues[id]; known {
				switch attr {
				case "Arn":
					env[k] = q.ARN
					continue
				case "QueueName":
					env[k] = q.Name
					continue
				case "QueueUrl":
					env[k] = q.URL
					continue
				}
			}
		}
		unresolved = append(unresolved, k+"="+compact(v))
	}
	if len(unresolved) > 0 {
		sort.Strings(unresolved)
		return nil, fmt.Errorf("sqsesm: function %s: environment %v only resolves on deployment", fn.LogicalID, unresolved)
	}
	for k, v := range override {
		env[k] = v
	}
	return func(k string) string { return env[k] }, nil
}
