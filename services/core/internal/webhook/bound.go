package webhook

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on what the core keeps of one alert — the body queued while its
// agent is busy, and the copy stored with its investigation: each
// annotation name at most MaxAnnotationName bytes and value at most
// MaxAnnotation, all of them at most
// MaxAnnotations, the generator URL at most MaxGeneratorURL. Labels are
// bounded by Alert.Problem. 300 queued alerts with 0.9 MB
// annotations once took a core from 17 to 411 MB.
const (
	MaxAnnotationName = 256
	MaxAnnotation     = 2 << 10
	MaxAnnotations    = 8 << 10
	MaxGeneratorURL   = 2 << 10
)

// Bound returns a copy of a within the bounds above. A cut value ends in
// "…[cut: N bytes]"; annotations past the total are dropped, the summary
// and description first kept, and "kubecrew_dropped_annotations" names
// how many. Annotations already within the bounds (nearly always) are
// kept as they are: the map is only read from here on.
func Bound(a Alert) Alert {
	a.GeneratorURL = cut(a.GeneratorURL, MaxGeneratorURL)
	if len(a.Annotations) == 0 || withinBounds(a.Annotations) {
		return a
	}
	keys := make([]string, 0, len(a.Annotations))
	for k := range a.Annotations {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case "summary":
			return 0
		case "description":
			return 1
		}
		return 2
	}
	slices.SortFunc(keys, func(x, y string) int {
		if rx, ry := rank(x), rank(y); rx != ry {
			return rx - ry
		}
		return strings.Compare(x, y)
	})
	out, total, dropped := make(map[string]string, len(keys)), 0, 0
	for _, k := range keys {
		v := cut(a.Annotations[k], MaxAnnotation)
		kk := cut(k, MaxAnnotationName)
		if total+len(kk)+len(v) > MaxAnnotations {
			dropped++
			continue
		}
		out[kk] = v
		total += len(kk) + len(v)
	}
	if dropped > 0 {
		out["kubecrew_dropped_annotations"] = fmt.Sprintf("%d annotation(s) past the %d-byte bound", dropped, MaxAnnotations)
	}
	a.Annotations = out
	return a
}

// withinBounds reports whether Bound would change nothing of annotations.
func withinBounds(annotations map[string]string) bool {
	total := 0
	for k, v := range annotations {
		if len(k) > MaxAnnotationName || len(v) > MaxAnnotation {
			return false
		}
		total += len(k) + len(v)
	}
	return total <= MaxAnnotations
}

// cut bounds s to max bytes on a rune boundary, saying how much was cut.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := fmt.Sprintf("…[cut: %d bytes]", len(s))
	end := max(limit-len(marker), 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + marker
}
