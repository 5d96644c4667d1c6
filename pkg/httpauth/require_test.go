package httpauth

import "testing"

// TestRequireToken: closed by default; only AUTH_DISABLED opens the door,
// and never beside a token.
func TestRequireToken(t *testing.T) {
	for _, tc := range []struct {
		write, read string
		disabled    bool
		want        string
	}{
		{"", "", false, "AUTH_TOKEN"},
		{"", "r", false, "AUTH_READ_TOKEN"},
		{"w", "", true, "AUTH_DISABLED"},
		{"", "r", true, "AUTH_DISABLED"},
		{"", "", true, ""},
		{"w", "", false, ""},
		{"w", "r", false, ""},
	} {
		setting, problem := RequireToken(tc.write, tc.read, tc.disabled)
		if setting != tc.want || (setting == "") != (problem == "") {
			t.Errorf("RequireToken(%q, %q, %v) = %q, %q; want %q", tc.write, tc.read, tc.disabled, setting, problem, tc.want)
		}
	}
}
