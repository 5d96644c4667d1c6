package persona

import (
	"strings"
	"testing"
)

// FuzzParseSkill: SKILL.md front matter parsing never panics; an error
// names the file; a parsed skill has a name, a description and a body.
func FuzzParseSkill(f *testing.F) {
	f.Add([]byte("---\nname: health-sweep\ndescription: sweep the cluster\n---\nDo it.\n"))
	f.Add([]byte("---\nname: [a, b]\ndescription: x\n---\nbody"))
	f.Add([]byte("\ufeff---\r\nname: x\r\ndescription: \"y\"\r\n...\r\nbody\r\n"))
	f.Add([]byte("---\nname: x\n"))
	f.Add([]byte("---\n: :\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSkill("noor/skills/x/SKILL.md", data)
		if err != nil {
			if !strings.Contains(err.Error(), "noor/skills/x/SKILL.md") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if strings.TrimSpace(s.Name) == "" || strings.TrimSpace(s.Description) == "" || strings.TrimSpace(s.Body) == "" {
			t.Fatalf("parsed skill %+v lacks a name, description or body", s)
		}
	})
}

// FuzzParseEnv: agent.env parsing never panics and an error names the file.
func FuzzParseEnv(f *testing.F) {
	f.Add([]byte("AGENT_TOOLS=a,b\n# comment\nAGENT_MODEL=\"x\"\n"))
	f.Add([]byte("=x\nA B=c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vars, err := ParseEnv("noor/agent.env", data)
		if err != nil {
			if !strings.Contains(err.Error(), "noor/agent.env") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, v := range vars {
			if v.Key == "" || v.Line < 1 {
				t.Fatalf("a variable without a name or line: %+v", v)
			}
		}
	})
}
