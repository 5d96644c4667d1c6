package redact

import (
	"regexp"
	"sort"
	"strings"
)

// span is one value to replace: s[start:end] becomes Marker(kind).
type span struct {
	start, end int
	kind       Kind
}

// rule finds the values of one shape of secret. Each looks for a cheap
// literal anchor first (strings.Index is fast; a regular expression run
// over a megabyte of log is not) and matches an anchored expression there.
type rule func(s, lower string) []span

var rules = []rule{
	findKnown,
	anchored([]string{"-----BEGIN"}, false, false, privateKeyRE, 0, KindPrivateKey, nil, 0),
	findURLs,
	anchored([]string{"eyJ"}, false, false, jwtRE, 0, KindJWT, nil, 8192),
	findAuthorization,
	anchored([]string{"bearer"}, true, true, bearerRE, 1, KindBearer, looksRandom, 4096),
	anchored([]string{"AKIA", "ASIA", "ABIA", "ACCA"}, false, true, awsRE, 0, KindAWSKey, nil, 64),
	anchored([]string{"AIza", "ya29."}, false, false, gcpRE, 0, KindGCPKey, nil, 4096),
	anchored([]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "glpat-", "sk-"}, false, true, vendorTokenRE, 0, KindToken, vendorTokenOK, 4096),
	anchored([]string{"name:"}, false, true, envYAMLRE, 2, KindEnv, envValueOK, 4096),
	anchored([]string{`"name"`}, false, false, envJSONRE, 2, KindEnv, envValueOK, 4096),
	findPairs,
}

var (
	privateKeyRE  = regexp.MustCompile(`\A-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)
	jwtRE         = regexp.MustCompile(`\AeyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)
	bearerRE      = regexp.MustCompile(`\A(?i:bearer)[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)`)
	awsRE         = regexp.MustCompile(`\A(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`)
	gcpRE         = regexp.MustCompile(`\A(?:AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,})`)
	vendorTokenRE = regexp.MustCompile(`\A(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|xox[abposr]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9_-]{20,})`)
	authRE        = regexp.MustCompile(`\A(?i:authorization)["']?[ \t]*[:=][ \t]*["']?(?:([A-Za-z][A-Za-z0-9_-]*)[ \t]+)?([^\s"',;\\]+)`)
	envYAMLRE     = regexp.MustCompile(`\Aname:[ \t]*["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?[ \t]*\r?\n[ \t]*value:[ \t]*([^\r\n]*)`)
	envJSONRE     = regexp.MustCompile(`\A"name"[ \t]*:[ \t]*"([A-Za-z_][A-Za-z0-9_.-]*)"[ \t]*,[ \t]*"value"[ \t]*:[ \t]*"((?:[^"\\]|\\.)*)"`)
)

// anchored returns a rule that, at every occurrence of one of lits (fold:
// in any case; word: not preceded by a letter, digit or '_'), matches re
// against at most window bytes (0: the rest of s) and redacts submatch
// group of the match when ok (nil: always) accepts the match.
func anchored(lits []string, fold, word bool, re *regexp.Regexp, group int, kind Kind, ok func(s string, m []int) bool, window int) rule {
	return func(s, lower string) []span {
		var out []span
		hay := s
		if fold {
			hay = lower
		}
		for _, lit := range lits {
			for i := 0; ; {
				j := strings.Index(hay[i:], lit)
				if j < 0 {
					break
				}
				at := i + j
				i = at + 1
				if word && at > 0 && wordByte(s[at-1]) {
					continue
				}
				end := len(s)
				if window > 0 && at+window < end {
					end = at + window
				}
				m := re.FindStringSubmatchIndex(s[at:end])
				if m == nil || m[2*group] < 0 {
					continue
				}
				v := s[at+m[2*group] : at+m[2*group+1]]
				if v == "" || isMarker(v) || (ok != nil && !ok(s[at:end], m)) {
					continue
				}
				out = append(out, span{at + m[2*group], at + m[2*group+1], kind})
				i = at + m[1]
			}
		}
		return out
	}
}

// lowerASCII lower-cases the ASCII letters of s only, so that byte offsets
// in the result are offsets in s: the rules search it for literals in any
// case with strings.Index.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// looksRandom tells a credential from a word ("bearer authentication"):
// it holds a digit or a token character.
func looksRandom(s string, m []int) bool {
	return strings.ContainsAny(s[m[2]:m[3]], "0123456789-._~+/=")
}

// vendorTokenOK keeps "sk-" for keys that mix digits and capitals (not a
// kebab-case name that happens to start with sk-).
func vendorTokenOK(s string, m []int) bool {
	v := s[m[0]:m[1]]
	if !strings.HasPrefix(v, "sk-") {
		return true
	}
	return strings.ContainsAny(v, "0123456789") && strings.ContainsAny(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// envValueOK: the entry's name looks secret and its value is not one
// already redacted.
func envValueOK(s string, m []int) bool {
	v := strings.Trim(strings.TrimSpace(s[m[4]:m[5]]), `"'`)
	return SecretName(s[m[2]:m[3]]) && v != "" && !isMarker(v)
}

// findAuthorization finds the credential of an Authorization header (any
// scheme, or none); the scheme stays.
func findAuthorization(s, lower string) []span {
	var out []span
	for i := 0; ; {
		j := strings.Index(lower[i:], "authorization")
		if j < 0 {
			return out
		}
		at := i + j
		i = at + 1
		if at > 0 && wordByte(s[at-1]) {
			continue
		}
		m := authRE.FindStringSubmatchIndex(s[at:min(len(s), at+4096)])
		if m == nil || isMarker(s[at+m[4]:at+m[5]]) {
			continue
		}
		kind := KindAuthorization
		if m[2] >= 0 && strings.EqualFold(s[at+m[2]:at+m[3]], "bearer") {
			kind = KindBearer
		}
		out = append(out, span{at + m[4], at + m[5], kind})
		i = at + m[1]
	}
}

// apply replaces the spans (from every rule, in any order) in s. Where two
// overlap the one starting first wins, the longer at equal starts; what it
// leaves is found in the next round.
func apply(s string, spans []span) (string, Counts) {
	if len(spans) == 0 {
		return s, nil
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].end > spans[j].end
	})
	var b strings.Builder
	b.Grow(len(s) + len(spans)*MaxMarkerLen)
	var c Counts
	last := 0
	for _, sp := range spans {
		if sp.start < last {
			continue
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(Marker(sp.kind))
		last = sp.end
		c.Add(sp.kind, 1)
	}
	b.WriteString(s[last:])
	return b.String(), c
}
