package jsiirt

import "testing"

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
