package webhook

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// streaming makes Decode stream every body for the test.
func streaming(t *testing.T) {
	old := streamAfter
	streamAfter = 0
	t.Cleanup(func() { streamAfter = old })
}

// TestStreamKeepsEncodingJSONSemantics: a storm's body, decoded alert by
// alert, keeps every semantic and refusal of the one-pass decoder.
func TestStreamKeepsEncodingJSONSemantics(t *testing.T) {
	streaming(t)
	TestDecodeKeepsEncodingJSONSemantics(t)
}

// TestStreamBoundsEachAlert: a streamed alert is kept within Bound as it
// is read, and its content hash is still the whole alert's (a changed cut
// annotation is new information).
func TestStreamBoundsEachAlert(t *testing.T) {
	big := strings.Repeat("d", 900_000)
	body := `{"version":"4","status":"firing","alerts":[{"status":"firing","fingerprint":"f1","labels":{"alertname":"A"},"annotations":{"description":"` + big + `"}}]}`
	whole, err := Decode(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	streaming(t)
	m, err := Decode(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Alerts[0].Annotations["description"]); got > MaxAnnotation {
		t.Errorf("streamed description kept %d bytes, the bound is %d", got, MaxAnnotation)
	}
	if m.Alerts[0].ContentHash() != whole.Alerts[0].ContentHash() {
		t.Errorf("content hash %s streamed, %s whole", m.Alerts[0].ContentHash(), whole.Alerts[0].ContentHash())
	}
}

// FuzzStreamMatchesWhole: both decoders take and refuse the same bodies,
// and what they take is the same message (the whole one bounded).
func FuzzStreamMatchesWhole(f *testing.F) {
	f.Add([]byte(`{"version":"4","status":"firing","receiver":"kubecrew","groupKey":"g","truncatedAlerts":3,"alerts":[{"status":"firing","fingerprint":"f1","labels":{"alertname":"A","namespace":"ns"},"annotations":{"summary":"s"},"startsAt":"2026-11-30T11:00:00Z","endsAt":"0001-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"ALERTS":null,"alerts":[{"Labels":{"alertname":"A"}}],"version":"4","status":"resolved"}`))
	f.Add([]byte(`{"version":"4","status":"firing","alerts":[]} {}`))
	f.Add([]byte(`{"version":"4","status":"firing","alerts":[{"labels":{"a":1}}]}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		old := streamAfter
		streamAfter = 1 << 20
		whole, errW := Decode(bytes.NewReader(body))
		streamAfter = 0
		stream, errS := Decode(bytes.NewReader(body))
		streamAfter = old
		if (errW == nil) != (errS == nil) {
			t.Fatalf("whole: %v; streamed: %v", errW, errS)
		}
		if errW != nil {
			return
		}
		for i := range whole.Alerts {
			whole.Alerts[i] = Bound(whole.Alerts[i])
			whole.Alerts[i].hash, stream.Alerts[i].hash = "", ""
		}
		if !reflect.DeepEqual(whole, stream) {
			t.Fatalf("whole %+v\nstreamed %+v", whole, stream)
		}
	})
}

// TestStreamRejectsInvalidUTF8InALabel: a streamed storm flags the alert
// whose own bytes were no UTF-8 and the decoder repaired in a label; a
// U+FFFD an alert sends as such, in bytes that are UTF-8, is a character.
func TestStreamRejectsInvalidUTF8InALabel(t *testing.T) {
	streaming(t)
	alert := func(fp, pod, ann string) string {
		return `{"status":"firing","fingerprint":"` + fp + `","labels":{"alertname":"A","pod":"` + pod + `"},"annotations":{"summary":"s` + ann + `"}}`
	}
	body := `{"version":"4","status":"firing","alerts":[` + alert("f1", "web-\xff", "") + `,` +
		alert("f2", "web-2", "\xff") + `,` + alert("f3", "web-\uFFFD", "") + `]}`
	m, err := Decode(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"label pod holds invalid UTF-8", "", ""} {
		if got := m.Alerts[i].Problem(); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("alert %d: Problem() = %q, want %q", i+1, got, want)
		}
	}
}
