package monitoring_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/store"
)

// methods returns the method names of interface type T: the DynamoDB
// operations a runtime package may call.
func methods[T any]() []string {
	typ := reflect.TypeOf((*T)(nil)).Elem()
	out := make([]string, 0, typ.NumMethod())
	for i := range typ.NumMethod() {
		out = append(out, typ.Method(i).Name)
	}
	return out
}

// The operations whose SystemErrors the tables' alarms sum (and whose
// latency the dashboard graphs) are every operation the runtime can call
// on the table: the events table's store (store.API: the inbox page's
// BatchGetItem, an unparked attempt's DeleteItem) and the API-keys
// table's (apikey.DB: a key created or its tenant resharded in one
// TransactWriteItems). An operation left out fails with HTTP 500 without
// the SystemErrors alarm counting it.
func TestOperationsCoverTheRuntimesCalls(t *testing.T) {
	for _, op := range methods[store.API]() {
		assert.Contains(t, monitoring.Operations(), op, "the events table's store calls %s", op)
	}
	for _, op := range methods[apikey.DB]() {
		assert.Contains(t, monitoring.ApiKeysOperations(), op, "the API-keys store calls %s", op)
	}
}
