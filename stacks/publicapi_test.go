package stacks_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/stacks"
)

// TestListsAreFreshCopies checks that the lists the public packages export
// (action lists, operations, routes...) are new each call: a caller that
// changes the result it got does not change what the next caller, or the
// constructs' grants and templates, get. No synthesis.
func TestListsAreFreshCopies(t *testing.T) {
	strs := map[string]func() []string{
		"monitoring.Services":                   monitoring.Services,
		"monitoring.Operations":                 monitoring.Operations,
		"monitoring.TableOperations":            monitoring.TableOperations,
		"monitoring.ApiKeysOperations":          monitoring.ApiKeysOperations,
		"triggersapi.WebhookEventsTableActions": triggersapi.WebhookEventsTableActions,
		"triggersapi.ApiWebhookActions":         triggersapi.ApiWebhookActions,
		"triggersapi.AuthorizeActions":          triggersapi.AuthorizeActions,
		"dynamotable.BackupActions":             dynamotable.BackupActions,
		"dynamotable.ReadDataActions":           dynamotable.ReadDataActions,
		"dynamotable.IndexReadActions":          dynamotable.IndexReadActions,
		"dynamotable.WriteDataActions":          dynamotable.WriteDataActions,
		"dynamotable.ReadWriteDataActions":      dynamotable.ReadWriteDataActions,
		"archive.ArchiverPutActions":            archive.ArchiverPutActions,
		"eventstore.AppendActions":              eventstore.AppendActions,
		"eventstore.ReadInboxActions":           eventstore.ReadInboxActions,
		"eventstore.ReadInboxLeanActions":       eventstore.ReadInboxLeanActions,
		"eventstore.UpdateStatusActions":        eventstore.UpdateStatusActions,
		"stacks.SeedTableOperations":            stacks.SeedTableOperations,
		"stacks.Environments":                   stacks.Environments,
		"contract.RequestLogFields":             contract.RequestLogFields,
	}
	for name, f := range strs {
		t.Run(name, func(t *testing.T) { checkFreshSlice(t, name, f) })
	}
	t.Run("contract.Routes", func(t *testing.T) { checkFreshSlice(t, "contract.Routes", contract.Routes) })

	t.Run("triggersapi.PrebuiltDirs", func(t *testing.T) {
		first := triggersapi.PrebuiltDirs()
		if len(first) == 0 {
			t.Fatal("PrebuiltDirs() is empty")
		}
		want := maps.Clone(first)
		for k := range first {
			first[k] = "changed"
		}
		first["extra"] = "changed"
		if got := triggersapi.PrebuiltDirs(); !maps.Equal(got, want) {
			t.Errorf("after changing the first result, PrebuiltDirs() = %v, want %v", got, want)
		}
	})
}

// checkFreshSlice fails when changing every element of f's result shows
// in the next call's result.
func checkFreshSlice[E comparable](t *testing.T, name string, f func() []E) {
	t.Helper()
	first := f()
	if len(first) == 0 {
		t.Fatalf("%s() is empty", name)
	}
	want := slices.Clone(first)
	var zero E
	for i := range first {
		first[i] = zero
	}
	if got := f(); !slices.Equal(got, want) {
		t.Errorf("after changing the first result, %s() = %v, want %v", name, got, want)
	}
}
