package redact

import (
	"strings"
)

// secretQueryParams are query (and fragment) parameter names that carry a
// credential although SecretName would not say so.
var secretQueryParams = map[string]bool{
	"sig": true, "signature": true, "key": true, "code": true, "auth": true, "pass": true, "pwd": true,
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true,
	"x-goog-signature": true, "x-goog-credential": true, "private_token": true,
}

func secretParam(name string) bool {
	return secretQueryParams[strings.ToLower(name)] || SecretName(name)
}

// findURLs finds, in every scheme://… of s, its userinfo, the secret
// parameters of its query and fragment, and the secret path of a Slack or
// Discord webhook.
func findURLs(s, _ string) []span {
	var out []span
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		at := i + j
		i = at + 3
		// Whatever precedes "://" (a scheme, a typo, nothing), what follows
		// is read as an authority: a credential there is one.
		end := i
		for end < len(s) && !urlEnd(s[end]) {
			end++
		}
		out = append(out, urlSpans(s, i, end)...)
		i = end
	}
	return out
}

func urlEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '<', '>', '`', '\\', '{', '}', '|', '^':
		return true
	}
	return false
}

// urlSpans finds the secrets of the URL s[from:to] (what follows "scheme://").
func urlSpans(s string, from, to int) []span {
	var out []span
	rest := s[from:to]
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	authority := rest[:authEnd]
	host := authority
	if k := strings.LastIndexByte(authority, '@'); k >= 0 {
		host = authority[k+1:]
		if k > 0 && !isMarker(authority[:k]) {
			out = append(out, span{from, from + k, KindURLUserinfo})
		}
	}
	host = strings.ToLower(host)
	pathEnd := len(rest)
	if k := strings.IndexAny(rest[authEnd:], "?#"); k >= 0 {
		pathEnd = authEnd + k
	}
	path := rest[authEnd:pathEnd]
	for _, hook := range []struct{ host, prefix string }{
		{"hooks.slack.com", "/services/"}, {"discord.com", "/api/webhooks/"}, {"discordapp.com", "/api/webhooks/"},
	} {
		if (host == hook.host || strings.HasSuffix(host, "."+hook.host)) && strings.HasPrefix(path, hook.prefix) &&
			len(path) > len(hook.prefix) && !isMarker(path[len(hook.prefix):]) {
			out = append(out, span{from + authEnd + len(hook.prefix), from + pathEnd, KindWebhook})
		}
	}
	// Query and fragment: name=value parameters split at & ; ? #.
	start := pathEnd + 1
	for i := start; i <= len(rest); i++ {
		if i < len(rest) && rest[i] != '&' && rest[i] != ';' && rest[i] != '?' && rest[i] != '#' {
			continue
		}
		if start < i {
			if k, v, ok := strings.Cut(rest[start:i], "="); ok && v != "" && !isMarker(v) && secretParam(k) {
				out = append(out, span{from + start + len(k) + 1, from + i, KindURLQuery})
			}
		}
		start = i + 1
	}
	return out
}
