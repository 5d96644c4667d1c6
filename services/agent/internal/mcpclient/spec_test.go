package mcpclient

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParseServers: AGENT_MCP_SERVERS never panics the parser, and what it
// accepts is well-formed: valid unique names, a URL or a command.
func FuzzParseServers(f *testing.F) {
	for _, s := range []string{"", "k8s=kubernetes-mcp-server --read-only", "a=http://h/mcp;b=cmd x,y\nc=https://u:p@h", "=x", "a=;", "a=b=c", ";;;", "a=http://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := ParseServers(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, sp := range specs {
			if !nameRE.MatchString(sp.Name) || seen[sp.Name] {
				t.Fatalf("accepted name %q in %q", sp.Name, s)
			}
			seen[sp.Name] = true
			if (sp.URL == "") == (len(sp.Command) == 0) || (len(sp.Command) > 0 && sp.Command[0] == "") {
				t.Fatalf("accepted %+v from %q", sp, s)
			}
		}
	})
}

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Spec
		err  string
	}{
		{"", nil, ""},
		{"k8s=kubernetes-mcp-server --read-only --toolsets core,config", []Spec{
			{Name: "k8s", Command: []string{"kubernetes-mcp-server", "--read-only", "--toolsets", "core,config"}}}, ""},
		{" k8s = http://127.0.0.1:8080/mcp ;\n ev=node /opt/everything/index.js stdio; ", []Spec{
			{Name: "k8s", URL: "http://127.0.0.1:8080/mcp"}, {Name: "ev", Command: []string{"node", "/opt/everything/index.js", "stdio"}}}, ""},
		{"k8s", nil, "want name=URL or name=command args"},
		{"k8s=", nil, "want name=URL or name=command args"},
		{"K8s=x", nil, "must be 1-16 lower-case letters and digits"},
		{"k8s_x=x", nil, "must be 1-16 lower-case letters and digits"},
		{"a=x;a=y", nil, `"a" is used twice`},
		{"a=http://", nil, "is not a URL"},
	} {
		got, err := ParseServers(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if err := ParseAllow([]string{"k8s_pods_*", "ev_echo"}); err != nil {
		t.Error(err)
	}
	if err := ParseAllow([]string{"k8s_[pods"}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
	if !allowed([]string{"k8s_pods_*"}, "k8s_pods_list") || allowed([]string{"k8s_pods_*"}, "k8s_pods") || allowed(nil, "x") {
		t.Error("allowed")
	}
}
