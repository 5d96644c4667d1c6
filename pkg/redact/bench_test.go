package redact

import (
	"fmt"
	"strings"
	"testing"
)

// logText builds n bytes of realistic container log: mostly plain lines,
// one line in fifty holding a secret.
func logText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch {
		case i%50 == 7:
			fmt.Fprintf(&b, "2026-12-01T12:%02d:%02d.123Z level=debug msg=\"calling upstream\" url=https://svc:Pl4nted%d@api.internal/v1?token=t%d Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJpIjoxfQ.sig%d\n", i%60, i%60, i, i, i)
		default:
			fmt.Fprintf(&b, "2026-12-01T12:%02d:%02d.123Z level=info msg=\"request done\" method=GET path=/api/v1/items/%d status=200 duration_ms=%d user_agent=\"kube-probe/1.30\"\n", i%60, i%60, i, i%97)
		}
	}
	return b.String()[:n]
}

func BenchmarkString(b *testing.B) {
	for _, size := range []int{8000, 1 << 20} {
		text := logText(size)
		b.Run(fmt.Sprintf("log_%d_bytes", size), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				String(text)
			}
		})
	}
	clean := strings.ReplaceAll(strings.ReplaceAll(logText(1<<20), "Bearer", "B"), "token=", "t_")
	clean, _ = String(clean) // nothing left to find: the common case
	b.Run("clean_log_1048576_bytes", func(b *testing.B) {
		b.SetBytes(int64(len(clean)))
		b.ReportAllocs()
		for b.Loop() {
			String(clean)
		}
	})
}
