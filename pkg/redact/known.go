package redact

import (
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// KindSetting is a value of one of the process's own secret settings
// (Known): a credential with no recognisable shape, such as a generic
// webhook's path or an API key, redacted by its value.
const KindSetting Kind = "setting"

// minKnown is the shortest value Known keeps: a shorter one would hide
// ordinary words.
const minKnown = 8

// minKnownPath is the shortest http(s) path Known keeps of a URL.
const minKnownPath = 16

var (
	knownMu sync.Mutex
	known   atomic.Pointer[[]string]
)

// Known adds the values of the process's secret settings (AUTH_TOKEN, an
// API key, a webhook URL) to what String redacts wherever they appear: an
// error text quoting a URL whose secret is its path is redacted like one
// whose secret has a shape. A URL's userinfo password and query are added
// too, and its path when it is an http(s) URL's of 16 bytes or more. The binaries call it once, when they read their
// settings, before anything is served; values under 8 bytes are ignored.
func Known(values ...string) {
	knownMu.Lock()
	defer knownMu.Unlock()
	var next []string
	if cur := known.Load(); cur != nil {
		next = append(next, *cur...)
	}
	add := func(v string) {
		if len(v) >= minKnown && !isMarker(v) {
			next = append(next, v)
		}
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		add(v)
		if u, err := url.Parse(v); err == nil && u.Host != "" {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			add(u.RawQuery)
			// An http(s) path this long carries a token (a webhook's);
			// a database name does not.
			if (u.Scheme == "http" || u.Scheme == "https") && len(u.EscapedPath()) >= minKnownPath {
				add(u.EscapedPath())
			}
		}
	}
	known.Store(&next)
}

// findKnown finds the values Known was given.
func findKnown(s, _ string) []span {
	vals := known.Load()
	if vals == nil {
		return nil
	}
	var out []span
	for _, v := range *vals {
		for i := 0; ; {
			j := strings.Index(s[i:], v)
			if j < 0 {
				break
			}
			out = append(out, span{i + j, i + j + len(v), KindSetting})
			i += j + len(v)
		}
	}
	return out
}
