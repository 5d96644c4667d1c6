package config

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// The table is exactly what Load reads: a setting added to Load and not to
// Specs (or the reverse) would be missing from --help and /info.
func TestSpecsAreWhatLoadReads(t *testing.T) {
	read := map[string]bool{}
	if _, err := Load(func(k string) string { read[k] = true; return "" }); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for k := range read {
		got = append(got, k)
	}
	for _, s := range Specs {
		want = append(want, s.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("Load reads %v,\nSpecs list %v", got, want)
	}
}

func TestEffectiveSettingsRedactSecrets(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://kc:pw@db:5432/kc", "AUTH_TOKEN": "s3cret", "ALERT_COOLDOWN": "45m"}
	c, err := Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if v := s["DATABASE_URL"].Value; strings.Contains(v, "pw") || !strings.Contains(v, "db:5432") {
		t.Errorf("DATABASE_URL shown as %q", v)
	}
	if v := s["AUTH_TOKEN"].Value; strings.Contains(v, "s3cret") || v == "" {
		t.Errorf("AUTH_TOKEN shown as %q", v)
	}
	if s["ALERT_COOLDOWN"] != (Setting{Value: "45m", Source: "env"}) || s["LISTEN_ADDR"] != (Setting{Value: ":8080", Source: "default"}) {
		t.Errorf("settings = %+v", s)
	}
	c.CheckEnviron([]string{"ALERT_COOLDOWNS=1h", "AGENT_MODEL=qwen", "CORE_REPLICA=2", "HOME=/root"})
	if len(c.Unknown) != 2 || c.Unknown[0].DidYouMean != "ALERT_COOLDOWN" || c.Unknown[1].DidYouMean != "CORE_REPLICAS" {
		t.Errorf("unknown = %+v", c.Unknown)
	}
}
