package redact

import (
	"bytes"
	"encoding/json"
)

// JSON redacts a JSON document value by value, so the result stays valid
// JSON: every string passes through String, and a string under a key that
// looks secret (SecretName), or in the "value" field of an object under
// one, is replaced whole. A document that does not
// parse is returned as String would return its text, which may then not be
// JSON; callers that need JSON check with json.Valid.
func JSON(raw []byte) ([]byte, Counts) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out, n := String(string(raw))
		return []byte(out), n
	}
	var c Counts
	v = walk(v, false, false, &c)
	if c.Total() == 0 {
		return raw, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		out, n := String(string(raw))
		return []byte(out), n
	}
	return bytes.TrimRight(b.Bytes(), "\n"), c
}

// walk redacts v in place. secret: v is under a key that looks secret;
// parentSecret: v's parent object is, so its "value" field holds the secret
// (the agent's /info settings: {"GITHUB_TOKEN": {"value": …, "source": …}}).
func walk(v any, secret, parentSecret bool, c *Counts) any {
	switch t := v.(type) {
	case string:
		if secret && t != "" && !isMarker(t) {
			c.Add(KindPair, 1)
			return Marker(KindPair)
		}
		out, n := String(t)
		c.Merge(n)
		return out
	case []any:
		for i := range t {
			t[i] = walk(t[i], secret, false, c)
		}
	case map[string]any:
		for k, val := range t {
			named := SecretName(k)
			t[k] = walk(val, named || (parentSecret && k == "value"), named, c)
		}
	}
	return v
}
