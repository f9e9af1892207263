package assertions

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nagPacks are the cdk-nag packs stacks.CheckWithCdkNag runs.
var nagPacks = []string{"AwsSolutions", "Serverless"}

// nagFindings returns the findings of both packs (errors and warnings)
// that cdk-nag recorded in the cloud assembly, by stack.
func nagFindings(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for name, art := range manifest(t).Artifacts {
		for path, entries := range art.Metadata {
			for _, e := range entries {
				if e.Type != "aws:cdk:error" && e.Type != "aws:cdk:warning" {
					continue
				}
				msg, _ := e.Data.(string)
				if strings.HasPrefix(msg, "AwsSolutions-") || strings.HasPrefix(msg, "Serverless-") {
					out[name] = append(out[name], path+": "+firstLine(msg))
				}
			}
		}
		sort.Strings(out[name])
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// cdk-nag's AwsSolutions and Serverless packs run over every stack of the
// app (TestMain adds them as aspects): no unsuppressed finding, error or
// warning.
func TestCdkNag(t *testing.T) {
	findings := nagFindings(t)
	for stack, fs := range findings {
		assert.Empty(t, fs, "unsuppressed cdk-nag findings in %s:\n%s", stack, strings.Join(fs, "\n"))
	}
}

// cdk-nag really ran over every stack of the app: each has its report, no
// rule is non-compliant, and every suppression carries a reason.
func TestCdkNagReports(t *testing.T) {
	require.NotEmpty(t, appStacks)
	for _, pack := range nagPacks {
		for _, stack := range appStacks {
			t.Run(pack+"/"+stack, func(t *testing.T) {
				f, err := os.Open(filepath.Join(assemblyDir, pack+"--"+stack+"-NagReport.csv"))
				require.NoError(t, err, "cdk-nag %s report for %s", pack, stack)
				defer f.Close()
				rows, err := csv.NewReader(f).ReadAll()
				require.NoError(t, err)
				if pack == "AwsSolutions" {
					// (the Serverless pack has no rule for a stack of tables
					// only: its report is then just the header)
					require.Greater(t, len(rows), 1, "the report lists the rules it checked")
				}
				require.Equal(t, []string{"Rule ID", "Resource ID", "Compliance", "Exception Reason", "Rule Level", "Rule Info"}, rows[0])
				for _, r := range rows[1:] {
					assert.True(t, strings.HasPrefix(r[0], pack+"-"), "%s in the %s report", r[0], pack)
					assert.NotEqual(t, "Non-Compliant", r[2], "%s on %s", r[0], r[1])
					if r[2] == "Suppressed" {
						assert.Greater(t, len(r[3]), 40, "%s on %s: a specific reason", r[0], r[1])
					}
				}
			})
		}
	}
}
