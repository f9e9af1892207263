package archive_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/schema"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

// The archive of an events table with every default: a versioned, encrypted,
// TLS-only bucket with access logs, objects to Glacier after 365 days, and
// the archiver invoked only for TTL deletions.
func ExampleNewExpiredEventsArchive() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	a := archive.NewExpiredEventsArchive(stack, jsii.String("ExpiredEventsArchive"), &archive.ExpiredEventsArchiveProps{
		EventsTable: events,
		// Code built in CI; without it, synth builds ArchiverPackage.
		Function: &archive.FunctionOptions{Code: awslambda.Code_FromBucket(
			awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts")), jsii.String("archiver.zip"), nil)},
	})
	fmt.Println(*a.ArchivePrefix())
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"VersioningConfiguration": map[string]any{"Status": "Enabled"},
		"LifecycleConfiguration": map[string]any{"Rules": []any{assertions.Match_ObjectLike(&map[string]any{
			"Prefix":      "expired/",
			"Transitions": []any{map[string]any{"StorageClass": "GLACIER", "TransitionInDays": 365}},
		})}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FilterCriteria": map[string]any{"Filters": []any{map[string]any{
			"Pattern": `{"eventName":["REMOVE"],"userIdentity":{"principalId":["dynamodb.amazonaws.com"],"type":["Service"]}}`,
		}}},
	})
	fmt.Println("ok")
	// Output:
	// expired/
	// ok
}

func TestValidation(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	newImage := eventstore.NewEventsTable(stack, jsii.String("Old"), &eventstore.EventsTableProps{StreamView: schema.StreamNewImage})
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	tests := []struct {
		name  string
		props *archive.ExpiredEventsArchiveProps
		want  []string
	}{
		{"nil props", nil, []string{"EventsTable is required"}},
		{"NEW_IMAGE stream", &archive.ExpiredEventsArchiveProps{EventsTable: newImage}, []string{`stream view is "NEW_IMAGE"`, "StreamNewAndOldImages"}},
		{"prefix", &archive.ExpiredEventsArchiveProps{EventsTable: events, Prefix: "expired"}, []string{`Prefix "expired" must end in "/"`}},
		{"storage class", &archive.ExpiredEventsArchiveProps{EventsTable: events, StorageClass: awss3.StorageClass_INFREQUENT_ACCESS()}, []string{`StorageClass "STANDARD_IA" is not an archive class`}},
		{"expiration before transition", &archive.ExpiredEventsArchiveProps{EventsTable: events, Expiration: awscdk.Duration_Days(jsii.Number(300))}, []string{"Expiration 300 days must be later than TransitionAfter (365 days)"}},
		{"partial days", &archive.ExpiredEventsArchiveProps{EventsTable: events, TransitionAfter: awscdk.Duration_Hours(jsii.Number(36))}, []string{"TransitionAfter 1.5 days"}},
	}
	for i, tt := range tests {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok {
					t.Errorf("%s: NewExpiredEventsArchive did not panic with an error: %v", tt.name, r)
					return
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error = %q, want it to contain %q", tt.name, err, w)
					}
				}
			}()
			archive.NewExpiredEventsArchive(stack, jsii.String(fmt.Sprint("A", i)), tt.props)
		}()
	}
}
