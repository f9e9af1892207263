package assertions

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

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
