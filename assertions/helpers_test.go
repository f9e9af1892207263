package assertions

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// one returns the only resource of typ whose logical id starts with prefix.
func one(t *testing.T, tp map[string]any, typ, prefix string) (string, map[string]any) {
	t.Helper()
	var ids []string
	found := map[string]map[string]any{}
	for id, r := range cdktest.Resources(tp, typ) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
			found[id] = r
		}
	}
	if len(ids) != 1 {
		t.Fatalf("want exactly one %s with logical id prefix %q, got %v", typ, prefix, ids)
	}
	return ids[0], found[ids[0]]
}

// jsonOf renders v compactly, for comparisons and messages.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// statement is one IAM policy statement, actions sorted.
type statement struct {
	Effect    string
	Actions   []string
	Resources []any
}

// roleStatements returns the statements of every AWS::IAM::Policy attached
// to the role whose logical id starts with rolePrefix.
func roleStatements(t *testing.T, tp map[string]any, rolePrefix string) []statement {
	t.Helper()
	roleID, _ := one(t, tp, "AWS::IAM::Role", rolePrefix)
	var out []statement
	for _, p := range cdktest.Resources(tp, "AWS::IAM::Policy") {
		props := cdktest.Props(p)
		attached := false
		for _, r := range props["Roles"].([]any) {
			if ref, ok := r.(map[string]any)["Ref"]; ok && ref == roleID {
				attached = true
			}
		}
		if !attached {
			continue
		}
		doc := props["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			sm := s.(map[string]any)
			st := statement{Effect: sm["Effect"].(string)}
			switch a := sm["Action"].(type) {
			case string:
				st.Actions = []string{a}
			case []any:
				for _, x := range a {
					st.Actions = append(st.Actions, x.(string))
				}
			}
			sort.Strings(st.Actions)
			switch r := sm["Resource"].(type) {
			case []any:
				st.Resources = r
			default:
				st.Resources = []any{r}
			}
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		t.Fatalf("role %s has no policy statements", roleID)
	}
	return out
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// archiveMappings counts the template's event source mappings on
// streamArn (any stream when "") whose only filter is the archive's
// (archive.TTLFilter: TTL deletions): an archive of expired events each.
func archiveMappings(t *testing.T, tmpl assertions.Template, streamArn string) int {
	t.Helper()
	var want any
	if err := json.Unmarshal([]byte((*archive.TTLFilter())["pattern"].(string)), &want); err != nil {
		t.Fatalf("archive.TTLFilter: %v", err)
	}
	n := 0
	for _, m := range *tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil) {
		props, _ := (*m)["Properties"].(map[string]any)
		if streamArn != "" && props["EventSourceArn"] != streamArn {
			continue
		}
		criteria, _ := props["FilterCriteria"].(map[string]any)
		filters, _ := criteria["Filters"].([]any)
		if len(filters) != 1 {
			continue
		}
		pattern, _ := filters[0].(map[string]any)["Pattern"].(string)
		var got any
		if json.Unmarshal([]byte(pattern), &got) == nil && reflect.DeepEqual(got, want) {
			n++
		}
	}
	return n
}
