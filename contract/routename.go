package contract

import "strings"

// String returns the route as "METHOD /path/{param}": its value of
// DimensionRoute and LogFieldRoute.
func (r Route) String() string { return r.Method + " " + r.Path }

// RouteOf names the route of Routes that serves method and path, as
// Route.String ("GET /v1/inbox", "PATCH /v1/events/{event_id}"), or
// RouteOther when none does. A path equal to a route's path (such as
// "/v1/events/batch") is that route's alone, never a parameter's value.
// The result has at most len(Routes())+1 values, so it is safe as a metric
// dimension.
func RouteOf(method, path string) string {
	exact := false
	for _, r := range routes {
		if r.Path == path {
			exact = true
			if r.Method == method {
				return r.String()
			}
		}
	}
	if exact {
		return RouteOther
	}
	segs := strings.Split(path, "/")
	for _, r := range routes {
		if r.Method == method && matchTemplate(r.Path, segs) {
			return r.String()
		}
	}
	return RouteOther
}

// matchTemplate reports whether path segments segs fill template, each
// "{param}" segment with one non-empty segment.
func matchTemplate(template string, segs []string) bool {
	tsegs := strings.Split(template, "/")
	if len(tsegs) != len(segs) {
		return false
	}
	for i, t := range tsegs {
		param := len(t) > 2 && t[0] == '{' && t[len(t)-1] == '}'
		if param && segs[i] == "" || !param && t != segs[i] {
			return false
		}
	}
	return true
}
