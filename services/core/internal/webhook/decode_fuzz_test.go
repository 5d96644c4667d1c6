package webhook

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecode: decoding a webhook body never panics; a body it accepts is a
// version 4 message with a known status and at least one alert, and every
// alert either has a problem (it is rejected alone) or a usable identity; a
// refusal says why.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":"4","status":"firing","receiver":"kubecrew","groupKey":"g","alerts":[{"status":"firing","fingerprint":"f1","labels":{"alertname":"A","namespace":"ns"},"annotations":{"summary":"s"},"startsAt":"2026-11-30T11:00:00Z","endsAt":"0001-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"version":"4","status":"resolved","alerts":[{"status":"","fingerprint":" \u0000","labels":{}}]}`))
	f.Add([]byte(`{"version":"3"}`))
	f.Add([]byte(`{"version":"4","status":"firing","alerts":[]} {}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(bytes.NewReader(body))
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("a refusal without a reason")
			}
			return
		}
		if m.Version != "4" || (m.Status != "firing" && m.Status != "resolved") || len(m.Alerts) == 0 {
			t.Fatalf("accepted %+v", m)
		}
		for _, a := range m.Alerts {
			p := a.Problem()
			if p != a.Problem() {
				t.Fatal("Problem is not deterministic")
			}
			if p != "" {
				continue
			}
			if strings.TrimSpace(a.Fingerprint) == "" || len(a.Fingerprint) > MaxFingerprint || !utf8.ValidString(a.Fingerprint) ||
				strings.ContainsAny(a.Fingerprint, "\x00\n\r") || strings.TrimSpace(a.Alertname()) == "" {
				t.Fatalf("alert with fingerprint %q and alertname %q has no problem", a.Fingerprint, a.Alertname())
			}
			_ = a.ContentHash()
		}
	})
}
