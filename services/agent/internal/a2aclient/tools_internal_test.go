package a2aclient

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// agent_slug's enum, a struct-tag literal, is the fleet: persona.All's
// slugs in order, in every verb.
func TestAgentSlugEnumIsTheFleet(t *testing.T) {
	var slugs []string
	for _, p := range persona.All {
		slugs = append(slugs, p.Slug)
	}
	want := strings.Join(slugs, ",")
	for _, v := range []any{askArgs{}, notifyArgs{}, delegateArgs{}} {
		f, ok := reflect.TypeOf(v).FieldByName("AgentSlug")
		if got := f.Tag.Get("enum"); !ok || got != want {
			t.Errorf("%T agent_slug enum = %q, want %q", v, got, want)
		}
	}
}
