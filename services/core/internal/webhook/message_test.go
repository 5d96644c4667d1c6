package webhook

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestContentHashIsStable: the hashes are the ones earlier versions
// stored (alert_state.content_hash); a change would make every standing
// alert look changed after an upgrade and investigate it again.
func TestContentHashIsStable(t *testing.T) {
	tests := []struct {
		name string
		a    Alert
		want string
	}{
		{"empty", Alert{}, "b3a75b5801b55c62372770ce"},
		{"alertname only", Alert{Labels: map[string]string{"alertname": "A"}}, "657d002b6bcc6d1b43bbac23"},
		{"crash loop", Alert{Labels: map[string]string{"alertname": "KubePodCrashLooping", "namespace": "team-01", "pod": "api-00001", "severity": "warning"},
			Annotations: map[string]string{"summary": "Pod api-00001 is crash looping", "runbook_url": "https://runbooks.example/crashloop"}}, "af5c7b2b438745b85a3404b5"},
		{"separators and UTF-8 in names and values", Alert{Labels: map[string]string{"a=b": "c\nd", "": "x", "é": "ü"},
			Annotations: map[string]string{"k": ""}}, "d3d1b713f892bfeb58853744"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.ContentHash(); got != tt.want {
				t.Fatalf("ContentHash = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProblemNamesTheFirstBadLabel: of several bad labels, the reason
// names the first in name order, whatever order the map iterates in.
func TestProblemNamesTheFirstBadLabel(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"good", map[string]string{"alertname": "A", "namespace": "ns", "summary": "two\tlines\n"}, ""},
		{"two bad names", map[string]string{"alertname": "A", "b\x00": "x", "a\x01": "y"}, `label name "a\\x01" holds a control character or invalid UTF-8`},
		{"two bad values", map[string]string{"alertname": "A", "z": "x\x00", "y": "y\x01"}, "label y holds a control character or invalid UTF-8"},
		{"long value before a bad name", map[string]string{"alertname": "A", "a": string(make([]byte, MaxLabelValue+1)), "b\x00": "x"}, "label a is 4097 bytes, the limit is 4096"},
		{"over the total", map[string]string{"alertname": "A", "a": string(make([]byte, MaxLabels)), "b\x00": "x"}, "labels are 16398 bytes together, the limit is 16384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Alert{Status: "firing", Fingerprint: "f", Labels: tt.labels}
			for range 20 { // map order varies between iterations
				if got := a.Problem(); got != tt.want {
					t.Fatalf("Problem = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

// TestDecodeKeepsEncodingJSONSemantics: the decoder behaves as
// encoding/json did — case-insensitive names, the last of duplicate
// names, invalid UTF-8 replaced — and each refusal keeps its kind: 413
// for a body over the limit (wherever the cut falls), 400 otherwise.
func TestDecodeKeepsEncodingJSONSemantics(t *testing.T) {
	const alert = `{"status":"firing","fingerprint":"f1","labels":{"alertname":"A"},"startsAt":"2026-11-30T11:00:00Z","endsAt":"0001-01-01T00:00:00Z"}`
	valid := `{"version":"4","status":"firing","alerts":[` + alert + `]}`
	tests := []struct {
		name  string
		body  string
		limit int64
		want  string // "" accepted; else the error's text contains it
		large bool
	}{
		{"valid", valid, MaxBodyBytes, "", false},
		{"names in another case", `{"Version":"4","STATUS":"firing","alerts":[` + alert + `]}`, MaxBodyBytes, "", false},
		{"the last duplicate wins", `{"version":"3","version":"4","status":"firing","alerts":[` + alert + `]}`, MaxBodyBytes, "", false},
		{"invalid UTF-8 in a value", `{"version":"4","status":"firing","receiver":"a` + "\xff" + `","alerts":[` + alert + `]}`, MaxBodyBytes, "", false},
		{"empty", ``, MaxBodyBytes, "empty body", false},
		{"syntax", `{"version":"4",}`, MaxBodyBytes, "malformed JSON at byte", false},
		{"type", `{"version":4}`, MaxBodyBytes, `malformed webhook: field "version": got JSON number, want string`, false},
		{"trailing data", valid + `{}`, MaxBodyBytes, "data after the webhook object", false},
		{"trailing garbage", valid + `x`, MaxBodyBytes, "data after the webhook object", false},
		{"cut inside a string", valid, 20, "larger than", true},
		{"cut after the object", valid + "     ", int64(len(valid)) + 2, "larger than", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(tt.body)), tt.limit)
			m, err := Decode(r)
			if tt.want == "" {
				if err != nil || m.Version != "4" || len(m.Alerts) != 1 || m.Alerts[0].Alertname() != "A" {
					t.Fatalf("Decode = %+v, %v; want the webhook", m, err)
				}
				return
			}
			var tl *TooLargeError
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &tl) != tt.large {
				t.Fatalf("Decode error = %v, want one containing %q (too large: %v)", err, tt.want, tt.large)
			}
		})
	}
}

// TestInvalidUTF8InALabelIsRejected: a label that is no UTF-8 rejects its
// alert, naming the label, while the rest of the group is taken; invalid
// UTF-8 elsewhere (the receiver, an annotation) rejects nothing (issue 31,
// case 6: the decoder made U+FFFD of it and the alert was investigated).
func TestInvalidUTF8InALabelIsRejected(t *testing.T) {
	alert := func(fp, labels, ann string) string {
		return `{"status":"firing","fingerprint":"` + fp + `","labels":{"alertname":"A"` + labels + `},"annotations":{"summary":"s` + ann +
			`"},"startsAt":"2026-11-30T11:00:00Z","endsAt":"0001-01-01T00:00:00Z"}`
	}
	body := `{"version":"4","status":"firing","receiver":"r` + "\xfe" + `","alerts":[` +
		alert("f1", `,"pod":"web-`+"\xff"+`"`, "") + `,` + alert("f2", `,"pod":"web-2"`, "\xff") + `,` +
		alert("f3", `,"n`+"\xc3"+`":"x"`, "") + `,` + alert("f4", `,"pod":"web-`+"\uFFFD"+`"`, "") + `]}`
	m, err := Decode(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"label pod holds invalid UTF-8", "", "holds invalid UTF-8", "label pod holds invalid UTF-8"} {
		if got := m.Alerts[i].Problem(); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("alert %d: Problem() = %q, want %q", i+1, got, want)
		}
	}
	// A U+FFFD sent as such in a body that is all UTF-8 is a character.
	clean, err := Decode(strings.NewReader(`{"version":"4","status":"firing","alerts":[` + alert("f4", `,"pod":"web-`+"\uFFFD"+`"`, "") + `]}`))
	if err != nil || clean.Alerts[0].Problem() != "" {
		t.Fatalf("a sent U+FFFD: %v, %q", err, clean.Alerts[0].Problem())
	}
}
