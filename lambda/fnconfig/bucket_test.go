package fnconfig

import (
	"regexp"
	"strings"
	"testing"
)

// validBucket is the regexp it replaced, compiled in the test only.
func TestValidBucketIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	cases := []string{"", "a", "ab", "abc", "a.c", "a-c", ".bc", "ab.", "-bc", "ab-", "ABC", "a_c", "a c", "a/c",
		"triggers-dev-data-archive-1a2b3c", "arn:aws:s3:::archive", "b.example", "0ab", "ab9", "zoë",
		strings.Repeat("a", 62), strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat(".", 61) + "a", "a" + strings.Repeat(".", 62) + "a"}
	for c := byte(0); c < 128; c++ {
		cases = append(cases, "a"+string(c)+"a", string(c)+"aa", "aa"+string(c))
	}
	for _, s := range cases {
		if got, want := validBucket(s), re.MatchString(s); got != want {
			t.Errorf("validBucket(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValidBucket(f *testing.F) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	for _, s := range []string{"abc", "a.b-c", "-ab", "arn:aws:s3:::x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validBucket(s), re.MatchString(s); got != want {
			t.Errorf("validBucket(%q) = %v, want %v", s, got, want)
		}
	})
}
