package a2aserver

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/a2aproject/a2a-go/a2a"
)

func TestFitStreamCutsOnlyWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	small := &sdk.Artifact{ID: "a", Parts: sdk.ContentParts{sdk.TextPart{Text: "short"}, sdk.DataPart{Data: map[string]any{"run_id": "r"}}}}
	if got := fitStream(small); got != small {
		t.Fatalf("a small artifact was changed")
	}
	big := &sdk.Artifact{ID: "b", Parts: sdk.ContentParts{
		sdk.TextPart{Text: strings.Repeat("é", 50000)}, // 100 KB of two-byte runes
		sdk.DataPart{Data: map[string]any{"run_id": "r", "findings": []any{}}},
	}}
	got := fitStream(big)
	raw, _ := json.Marshal(got)
	if len(raw) > maxStreamEvent {
		t.Fatalf("fitted artifact is %d bytes", len(raw))
	}
	text := got.Parts[0].(sdk.TextPart).Text
	if !utf8.ValidString(text) || !strings.HasSuffix(text, "tasks/get returns it whole)") || got.Metadata["kubecrew/truncated"] != true {
		t.Fatalf("fitted text ends %q, metadata %v", text[len(text)-60:], got.Metadata)
	}
	if _, ok := got.Parts[1].(sdk.DataPart); !ok || big.Parts[0].(sdk.TextPart).Text != strings.Repeat("é", 50000) {
		t.Fatalf("the data part must stay and the original must not change")
	}
}
