// Package redact removes secrets from text before it leaves a tool: what
// the model, the trace, the store, a report or a chat post sees (docs/MANUAL.md,
// "Redaction"). Every tool output passes through String once, in the tool
// registry's call path (pkg/tools); structured readers (ConfigMaps in
// k8s_get_yaml) use ConfigMapData before they render. A redacted value
// becomes a marker naming its kind, "[REDACTED:jwt]"; the caller records how
// many of each kind were replaced, never the value.
//
// Redaction is a safety net over data the agents read, not a proof: a secret
// with no recognisable shape and no secret-looking name stays.
package redact

import (
	"sort"
	"strconv"
	"strings"
)

// Kind names what was redacted.
type Kind string

// The kinds of value String and ConfigMapData redact.
const (
	KindPrivateKey     Kind = "private-key"     // -----BEGIN … PRIVATE KEY----- blocks
	KindJWT            Kind = "jwt"             // eyJ….eyJ….sig
	KindBearer         Kind = "bearer"          // "Bearer <token>"
	KindAuthorization  Kind = "authorization"   // Authorization: Basic|token|… <credential>
	KindAWSKey         Kind = "aws-key"         // AKIA…/ASIA… access key ids
	KindGCPKey         Kind = "gcp-key"         // AIza… API keys, ya29. OAuth tokens
	KindToken          Kind = "token"           // ghp_…, github_pat_…, xox?-…, glpat-…, sk-… shaped tokens
	KindURLUserinfo    Kind = "url-userinfo"    // scheme://user:pass@host
	KindURLQuery       Kind = "url-query"       // ?api-key=…&sig=…
	KindWebhook        Kind = "webhook"         // Slack/Discord webhook paths
	KindPair           Kind = "secret-pair"     // password=…, "token": "…", AccountKey=…;
	KindEnv            Kind = "secret-env"      // - name: DB_PASSWORD / value: …
	KindConfigMapValue Kind = "configmap-value" // a ConfigMap value (keys only)
)

// Marker is what replaces a redacted value of kind k.
func Marker(k Kind) string { return markerPrefix + string(k) + "]" }

const markerPrefix = "[REDACTED:"

// MaxMarkerLen is the length of the longest marker: a redacted text is never
// longer than the original by more than this per redacted value.
var MaxMarkerLen = len(Marker(KindConfigMapValue))

// isMarker reports whether s is exactly a marker (a value already redacted).
func isMarker(s string) bool {
	return strings.HasPrefix(s, markerPrefix) && strings.HasSuffix(s, "]") && strings.Count(s, "]") == 1
}

// Counts is how many values of each kind were redacted.
type Counts map[Kind]int

// Add counts one more value of kind k (n of them).
func (c *Counts) Add(k Kind, n int) {
	if n == 0 {
		return
	}
	if *c == nil {
		*c = Counts{}
	}
	(*c)[k] += n
}

// Merge adds o into c.
func (c *Counts) Merge(o Counts) {
	for k, n := range o {
		c.Add(k, n)
	}
}

// Total is the number of values redacted.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String lists the counts as "jwt=1 secret-pair=2", sorted by kind.
func (c Counts) String() string {
	ks := make([]string, 0, len(c))
	for k, n := range c {
		ks = append(ks, string(k)+"="+strconv.Itoa(n))
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

// String returns s with every recognised secret replaced by its marker, and
// how many of each kind it replaced. Text with nothing to redact comes back
// unchanged (the same string, no copy). It is idempotent: String of its own
// output changes nothing and counts nothing.
func String(s string) (string, Counts) {
	var c Counts
	// Every rule looks at the same text and the spans are replaced in one
	// pass. A value one rule hides inside another's span (a URL inside a
	// pair) is looked at again in the next round, on the output; a rule
	// never matches a marker, so the rounds end. Two are the most any
	// input seen needs; four bound it.
	for round := 0; round < 4; round++ {
		var spans []span
		lower := lowerASCII(s)
		for _, r := range rules {
			spans = append(spans, r(s, lower)...)
		}
		if len(spans) == 0 {
			break
		}
		var n Counts
		s, n = apply(s, spans)
		c.Merge(n)
	}
	return s, c
}

// CountMarkers counts the markers of known kinds already in s: what a tool
// redacted itself (ConfigMapData) before its output reached String.
func CountMarkers(s string) Counts {
	var c Counts
	for i := 0; ; {
		j := strings.Index(s[i:], markerPrefix)
		if j < 0 {
			return c
		}
		i += j + len(markerPrefix)
		end := strings.IndexByte(s[i:], ']')
		if end < 0 {
			return c
		}
		if k := Kind(s[i : i+end]); knownKinds[k] {
			c.Add(k, 1)
		}
	}
}

var knownKinds = map[Kind]bool{
	KindPrivateKey: true, KindJWT: true, KindBearer: true, KindAuthorization: true, KindAWSKey: true, KindGCPKey: true,
	KindToken: true, KindURLUserinfo: true, KindURLQuery: true, KindWebhook: true, KindPair: true, KindEnv: true,
	KindConfigMapValue: true, KindSetting: true,
}

// URL redacts a URL's userinfo and secret query parameters (LLM_BASE_URL in
// /info, a webhook address in a log line).
func URL(raw string) string {
	out, _ := apply(raw, findURLs(raw, ""))
	return out
}

// ConfigMapData replaces every value of a ConfigMap's data (or binaryData)
// with a marker, except under the keys allow accepts (nil: none). It
// returns how many values it replaced. Keys stay: they say what the
// ConfigMap configures without saying how.
func ConfigMapData[V any](data map[string]V, marker V, allow func(key string) bool) int {
	n := 0
	for k := range data {
		if allow != nil && allow(k) {
			continue
		}
		data[k] = marker
		n++
	}
	return n
}

// Error is err's text for a response, a trace, a report, a log or a row:
// an error quotes what failed (a URL with its userinfo, a setting), so its
// text passes String. Nil is "".
func Error(err error) string {
	if err == nil {
		return ""
	}
	out, _ := String(err.Error())
	return out
}
