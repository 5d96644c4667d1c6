package deployreview

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// The Dockerfile grammar the rules need is small — instructions, `\`
// continuations, comments — so it is parsed here rather than through
// BuildKit's parser, whose module would bring its whole dependency graph
// into pkg.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line  int
	cmd   string // upper case
	args  string
	stage int // index of its FROM
}

func parseDockerfile(raw []byte) []instruction {
	var out []instruction
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), maxFileBytes)
	var cur strings.Builder
	start, stage := 0, -1
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(t, "#") || (cur.Len() == 0 && t == "") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if c, ok := strings.CutSuffix(t, "\\"); ok {
			cur.WriteString(c + " ")
			continue
		}
		cur.WriteString(t)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{line: start, cmd: cmd, args: strings.TrimSpace(args), stage: stage})
	}
	return out
}

var (
	secretNameRE = regexp.MustCompile(`(?i)(passw(or)?d|secret|token|api[_-]?key|private[_-]?key|credential|access[_-]?key)`)
	urlRE        = regexp.MustCompile(`(?i)(^|\s)https?://`)
	digestRE     = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)
	aptRE        = regexp.MustCompile(`apt(-get)?\s+(-\S+\s+)*install`)
	apkRE        = regexp.MustCompile(`apk\s+(-\S+\s+)*add`)
	pipRE        = regexp.MustCompile(`pip3?\s+(-\S+\s+)*install`)
)

// checkDockerfile runs DF001–DF006 on one Dockerfile.
func checkDockerfile(file string, raw []byte) []Finding {
	ins := parseDockerfile(raw)
	var out []Finding
	stages := map[string]bool{} // AS names of earlier stages
	last := -1
	for _, in := range ins {
		last = max(last, in.stage)
	}
	var finalFrom, user *instruction
	healthcheck, expose := false, 0
	for i := range ins {
		in := &ins[i]
		switch in.cmd {
		case "FROM":
			img, alias := fromImage(in.args)
			if !stages[strings.ToLower(img)] && img != "scratch" && !strings.Contains(img, "$") && !pinned(img) {
				out = append(out, finding("DF001", file, in.line, "FROM "+img+" is not pinned"))
			}
			if alias != "" {
				stages[strings.ToLower(alias)] = true
			}
			if in.stage == last {
				finalFrom = in
			}
		case "USER":
			if in.stage == last {
				user = in
			}
		case "ADD":
			if urlRE.MatchString(in.args) {
				out = append(out, finding("DF003", file, in.line, "ADD "+firstField(in.args)+" fetches a URL"))
			}
		case "RUN":
			if msg := cacheLeft(in.args); msg != "" {
				out = append(out, finding("DF004", file, in.line, msg))
			}
		case "ENV", "ARG":
			for _, kv := range keyValues(in.cmd, in.args) {
				if secretNameRE.MatchString(kv[0]) && kv[1] != "" && !strings.HasPrefix(kv[1], "$") {
					out = append(out, finding("DF005", file, in.line, in.cmd+" "+kv[0]+" sets a value in the image"))
				}
			}
		case "HEALTHCHECK":
			if in.stage == last {
				healthcheck = true
			}
		case "EXPOSE":
			if in.stage == last && expose == 0 {
				expose = in.line
			}
		}
	}
	if finalFrom != nil && !fromIsScratch(finalFrom.args) {
		switch {
		case user == nil:
			out = append(out, finding("DF002", file, finalFrom.line, "the final stage sets no USER, so it runs as root"))
		case isRoot(user.args):
			out = append(out, finding("DF002", file, user.line, "USER "+user.args+" is root"))
		}
	}
	if expose > 0 && !healthcheck {
		out = append(out, finding("DF006", file, expose, "the image EXPOSEs a port but has no HEALTHCHECK"))
	}
	for i := range out {
		out[i].Kind = "Dockerfile"
	}
	return out
}

// fromImage is FROM's image and its stage alias (flags like --platform skipped).
func fromImage(args string) (img, alias string) {
	f := strings.Fields(args)
	for len(f) > 0 && strings.HasPrefix(f[0], "--") {
		f = f[1:]
	}
	if len(f) == 0 {
		return "", ""
	}
	if len(f) >= 3 && strings.EqualFold(f[1], "AS") {
		alias = f[2]
	}
	return f[0], alias
}

func fromIsScratch(args string) bool { img, _ := fromImage(args); return img == "scratch" }

// pinned: a digest, or a tag that is not latest.
func pinned(img string) bool {
	if digestRE.MatchString(img) {
		return true
	}
	slash := strings.LastIndex(img, "/")
	colon := strings.LastIndex(img, ":")
	if colon <= slash { // no tag (a colon before the last slash is a registry port)
		return false
	}
	return img[colon+1:] != "latest"
}

func isRoot(user string) bool {
	u, _, _ := strings.Cut(strings.TrimSpace(user), ":")
	return u == "root" || u == "0"
}

func firstField(s string) string {
	for _, f := range strings.Fields(s) {
		if !strings.HasPrefix(f, "--") {
			return f
		}
	}
	return s
}

// cacheLeft says which package manager left its cache in the RUN's layer.
func cacheLeft(run string) string {
	switch {
	case aptRE.MatchString(run) && !strings.Contains(run, "/var/lib/apt/lists"):
		return "apt-get install without rm -rf /var/lib/apt/lists/* in the same RUN"
	case apkRE.MatchString(run) && !strings.Contains(run, "--no-cache"):
		return "apk add without --no-cache"
	case pipRE.MatchString(run) && !strings.Contains(run, "--no-cache-dir"):
		return "pip install without --no-cache-dir"
	}
	return ""
}

// keyValues are ENV's or ARG's name/value pairs: `ENV A=1 B=2`,
// `ENV A 1` (the legacy form), `ARG NAME` / `ARG NAME=default`.
func keyValues(cmd, args string) [][2]string {
	var out [][2]string
	if cmd == "ENV" && !strings.Contains(strings.SplitN(args, " ", 2)[0], "=") {
		k, v, _ := strings.Cut(args, " ")
		return [][2]string{{k, strings.Trim(strings.TrimSpace(v), `"'`)}}
	}
	for _, f := range strings.Fields(args) {
		k, v, _ := strings.Cut(f, "=")
		out = append(out, [2]string{k, strings.Trim(v, `"'`)})
	}
	return out
}
