package redact

import (
	"strings"
	"unicode"
)

// secretSuffixes: a name whose last word ends with one of these holds a
// secret (DB_PASSWORD, githubToken, client-secret, x-api-key as "apikey").
var secretSuffixes = []string{
	"password", "passwd", "passphrase", "secret", "token", "credential", "credentials",
	"apikey", "accesskey", "secretkey", "privatekey", "accountkey", "sharedaccesskey",
	"sharedaccesssignature",
}

// secretWords mark a name as secret when the last word only says how the
// secret is encoded (SECRET_KEY_BASE, TOKEN_VALUE, PASSWORD_B64).
var secretWords = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "secret": true, "token": true,
	"credential": true, "credentials": true,
}

var encodingWords = map[string]bool{
	"base": true, "value": true, "data": true, "string": true, "str": true, "text": true,
	"raw": true, "b64": true, "base64": true, "hex": true,
}

// publicKeyQualifiers are the words before "key" that do not make a secret:
// finding_key, sort-key, cache_key, public_key, configMapKeyRef's key…
var publicKeyQualifiers = map[string]bool{
	"finding": true, "sort": true, "cache": true, "partition": true, "primary": true, "foreign": true,
	"idempotency": true, "dedup": true, "dedupe": true, "group": true, "route": true, "routing": true,
	"label": true, "object": true, "map": true, "public": true, "hash": true, "lookup": true,
	"index": true, "shard": true, "row": true, "composite": true, "unique": true, "config": true,
	"configmap": true, "node": true, "topology": true, "match": true, "selector": true, "metric": true,
	"host": true, "alert": true, "issue": true, "short": true, "next": true,
}

// SecretName reports whether a variable, field or parameter called name
// holds a secret value. It looks at the words of the name (split at
// punctuation and camelCase): the last word decides, so DB_PASSWORD,
// githubToken, AWS_SECRET_ACCESS_KEY and x-api-key are secret, while
// PASSWORD_FILE, TOKEN_URL, secretName, max_tokens, finding_key and a bare
// "key" (a configMapKeyRef's) are not.
func SecretName(name string) bool {
	words := splitWords(name)
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	for _, s := range secretSuffixes {
		if strings.HasSuffix(last, s) {
			return true
		}
	}
	if len(words) >= 2 {
		prev := words[len(words)-2]
		switch {
		case last == "pwd" || last == "pass":
			return true
		case last == "key":
			return !publicKeyQualifiers[prev]
		case last == "string" && prev == "connection", last == "str" && prev == "conn", last == "signature" && prev == "access":
			return true
		case encodingWords[last]:
			for _, w := range words[:len(words)-1] {
				if secretWords[w] {
					return true
				}
			}
		}
	}
	return false
}

// splitWords lower-cases name and splits it at every non-letter-or-digit and
// at camelCase boundaries ("APIKey" → api, key; "dbPassword" → db, password).
func splitWords(name string) []string {
	var words []string
	var cur []rune
	rs := []rune(name)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}
