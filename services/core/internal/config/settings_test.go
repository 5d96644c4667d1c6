package config

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// The table is exactly what Load reads: a setting added to Load and not to
// Specs (or the reverse) would be missing from --help and /info.
func TestSpecsAreWhatLoadReads(t *testing.T) {
	read := map[string]bool{}
	if _, err := Load(func(k string) string { read[k] = true; return map[string]string{"AUTH_DISABLED": "true"}[k] }); err != nil {
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

// TestAuthRequired: the core refuses to start without AUTH_TOKEN, or with
// AUTH_READ_TOKEN alone (issue 31, cases 1 and 2), naming the setting;
// AUTH_DISABLED=true is the one way in without a token, warned about in a
// text the log redactor leaves whole, and shown in /info's settings.
func TestAuthRequired(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
		warned  bool
	}{
		{"no token", map[string]string{}, "AUTH_TOKEN is not set", false},
		{"read token alone", map[string]string{"AUTH_READ_TOKEN": "r"}, "AUTH_READ_TOKEN is set without AUTH_TOKEN", false},
		{"disabled", map[string]string{"AUTH_DISABLED": "true"}, "", true},
		{"disabled and a token", map[string]string{"AUTH_DISABLED": "true", "AUTH_TOKEN": "w"}, "AUTH_DISABLED is true but AUTH_TOKEN", false},
		{"not a bool", map[string]string{"AUTH_DISABLED": "yes please"}, `AUTH_DISABLED: "yes please"`, false},
		{"token", map[string]string{"AUTH_TOKEN": "w"}, "", false},
		{"both tokens", map[string]string{"AUTH_TOKEN": "w", "AUTH_READ_TOKEN": "r"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var warned bool
			for _, w := range c.Warnings {
				if out, _ := redact.String(w); out != w {
					t.Errorf("the log redactor mangles the warning %q into %q", w, out)
				}
				warned = warned || w == AuthDisabledWarning
			}
			if warned != tc.warned || c.AuthDisabled != tc.warned {
				t.Errorf("warnings %q, AuthDisabled %v; want the AUTH_DISABLED warning: %v", c.Warnings, c.AuthDisabled, tc.warned)
			}
			if got := c.Settings["AUTH_DISABLED"].Value; got != map[bool]string{true: "true", false: "false"}[tc.warned] {
				t.Errorf("/info shows AUTH_DISABLED=%q", got)
			}
		})
	}
}
