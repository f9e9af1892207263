package contract

import "strings"

// ValidRegionName reports whether s has the shape of an AWS region name
// (us-east-1, ap-southeast-2, us-gov-west-1): two lowercase letters, one
// or more words of lowercase letters and a number, joined by '-'. The
// construct props, the app's context keys and the functions' WRITER_REGION
// all check regions with it. (No regexp: every function links this
// package, and a compile would cost every cold start.)
func ValidRegionName(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 || len(parts[0]) != 2 {
		return false
	}
	for i, p := range parts {
		if p == "" {
			return false
		}
		for _, r := range p {
			if i == len(parts)-1 && (r < '0' || r > '9') || i < len(parts)-1 && (r < 'a' || r > 'z') {
				return false
			}
		}
	}
	return true
}
