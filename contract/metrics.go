package contract

import "fmt"

// ValidMetricsNamespace checks a CloudWatch namespace (the construct's
// MetricsNamespace props at synth, METRICS_NAMESPACE in the functions): 1-255 characters of
// letters, digits and . - _ / # : and space, not starting with "AWS/".
func ValidMetricsNamespace(ns string) error {
	if ns == "" || len(ns) > 255 {
		return fmt.Errorf("metrics namespace %q must be 1-255 characters", ns)
	}
	if len(ns) >= 4 && ns[:4] == "AWS/" {
		return fmt.Errorf("metrics namespace %q starts with AWS/, which is reserved for AWS services: use for example Triggers/prod", ns)
	}
	for _, r := range ns {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		switch r {
		case '.', '-', '_', '/', '#', ':', ' ':
			ok = true
		}
		if !ok {
			return fmt.Errorf("metrics namespace %q has the character %q: use letters, digits and . - _ / # : space", ns, r)
		}
	}
	return nil
}
