package noisyneighbour

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
)

// TestMain installs DynamoDB Local when it is missing, as make dev's deps
// target does (the environment starts it, it does not install it).
func TestMain(m *testing.M) {
	root, err := ddblocal.ModuleRoot()
	if err == nil {
		_, err = ddblocal.FindJar(context.Background(), root, true)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "DynamoDB Local: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
