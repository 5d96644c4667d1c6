package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "6"}, 6 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"Azure ms wins", map[string]string{"Retry-After": "6", "retry-after-ms": "5250"}, 5250 * time.Millisecond},
		{"HTTP date", map[string]string{"Retry-After": "Tue, 01 Dec 2026 18:00:30 GMT"}, 30 * time.Second},
		{"date in the past", map[string]string{"Retry-After": "Tue, 01 Dec 2026 17:00:00 GMT"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"bad ms falls back to seconds", map[string]string{"Retry-After": "2", "retry-after-ms": "x"}, 2 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("%s: retryAfter = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"6", "0.5", "-1", "Tue, 01 Dec 2026 18:00:30 GMT", "1e308", "NaN", "soon"} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, seconds, ms string) {
		h := http.Header{}
		h.Set("Retry-After", seconds)
		h.Set("retry-after-ms", ms)
		if d := retryAfter(h, now); d < 0 {
			t.Fatalf("retryAfter(%q, %q) = %s: negative", seconds, ms, d)
		}
	})
}
