package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// RunContext is a run request's context: string values, as the playbooks
// and the prompt read them. On the wire each value may be any JSON value: a
// string is taken as it is; a number, true/false, an object or an array is
// kept as its compact JSON text ({"replicas": 3} → "3"); null drops the key.
type RunContext map[string]string

// UnmarshalJSON accepts an object of any JSON values (see RunContext).
func (c *RunContext) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf(`context must be a JSON object of names to values, e.g. {"namespace": "shop", "replicas": 3}`)
	}
	out := make(RunContext, len(raw))
	for k, v := range raw {
		v = bytes.TrimSpace(v)
		switch {
		case bytes.Equal(v, []byte("null")):
			continue
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("context.%s: %w", k, err)
			}
			out[k] = s
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err != nil {
				return fmt.Errorf("context.%s: %w", k, err)
			}
			out[k] = buf.String()
		}
	}
	*c = out
	return nil
}
