package jsiirt

import (
	"testing"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv" // before any jsii package
)

func TestFilter(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{BenignExitMessage, ""},
		{BenignExitMessage + "\n", ""},
		{"before\n" + BenignExitMessage + "after\n", "before\nafter\n"},
		{"Runtime process exited abnormally: exit status 1", "Runtime process exited abnormally: exit status 1"},
		{"real error\n", "real error\n"},
		{BenignExitMessage + BenignExitMessage, ""},
	}
	for _, tt := range tests {
		if got := string(Filter([]byte(tt.in))); got != tt.want {
			t.Errorf("Filter(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Close waits for jsii-runtime-go's waiter goroutine instead of sleeping:
// while Node runs, WaiterFrame names a running goroutine (so a
// jsii-runtime-go that renamed it fails here, not silently), and once Close
// returns that goroutine has ended, so whatever it printed went through the
// filter.
func TestCloseWaitsForTheWaiter(t *testing.T) {
	assert.False(t, WaiterRunning(), "no waiter before the runtime starts")
	root := constructs.NewRootConstruct(jsii.String("root")) // starts Node
	require.Equal(t, "root", *root.Node().Id())
	require.True(t, WaiterRunning(), "jsii-runtime-go's waiter goroutine was not found by %q", WaiterFrame)
	Close()
	assert.False(t, WaiterRunning(), "the waiter still runs after Close")
}
