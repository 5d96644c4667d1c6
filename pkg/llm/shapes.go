package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Servers answer the same chat completion in different shapes (docs/MANUAL.md,
// "Models"). normalizeCompletion rewrites the ones go-openai cannot decode
// or the engine cannot act on into the OpenAI shape, before go-openai sees
// the body:
//
//   - tool-call arguments as a JSON object instead of a string (llama.cpp's
//     llama-server, its issue #20198): the object's exact bytes become the
//     string, so the tool gets what the model sent;
//   - a tool call without an id (Ollama, LM Studio, older llama.cpp) or
//     without a type: "call_<choice>_<n>" and "function", so the answer sent
//     back pairs each result with its call;
//   - the legacy message.function_call with no tool_calls (a gateway
//     translating an older API; finish_reason "function_call"): one tool
//     call, finish_reason "tool_calls".
//
// A shape it cannot read (arguments that are a number, a tool call that is
// not an object) is an error naming the quirk. A body it has nothing to do
// with is returned as it came.
func normalizeCompletion(body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte(`"tool_calls"`)) && !bytes.Contains(body, []byte(`"function_call"`)) {
		return body, nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body, nil // go-openai reports what it cannot decode
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil {
		return body, nil
	}
	changed := false
	for i, ch := range choices {
		var msg map[string]json.RawMessage
		if json.Unmarshal(ch["message"], &msg) != nil {
			continue
		}
		c, err := normalizeMessage(msg, i)
		if err != nil {
			return nil, fmt.Errorf("choice %d: %w", i, err)
		}
		if !c {
			continue
		}
		changed = true
		ch["message"] = mustJSON(msg)
		if fr := string(ch["finish_reason"]); fr == `"function_call"` {
			ch["finish_reason"] = json.RawMessage(`"tool_calls"`)
		}
	}
	if !changed {
		return body, nil
	}
	top["choices"] = mustJSON(choices)
	return json.Marshal(top)
}

// normalizeMessage rewrites one message's tool calls in place; it reports
// whether it changed anything.
func normalizeMessage(msg map[string]json.RawMessage, choice int) (bool, error) {
	changed := false
	if fc := bytes.TrimSpace(msg["function_call"]); isNull(msg["tool_calls"]) && !isNull(fc) {
		if fc[0] != '{' {
			return false, fmt.Errorf("function_call is not an object: %s", oneLine(string(fc), 80))
		}
		msg["tool_calls"] = mustJSON([]map[string]json.RawMessage{{"function": fc}})
		delete(msg, "function_call")
		changed = true
	}
	if isNull(msg["tool_calls"]) {
		return changed, nil
	}
	var calls []map[string]json.RawMessage
	if err := json.Unmarshal(msg["tool_calls"], &calls); err != nil {
		return false, fmt.Errorf("tool_calls is not a list of objects: %w", err)
	}
	for j, tc := range calls {
		var id string
		if json.Unmarshal(tc["id"], &id) != nil || id == "" {
			tc["id"] = mustJSON(fmt.Sprintf("call_%d_%d", choice, j))
			changed = true
		}
		if isNull(tc["type"]) {
			tc["type"] = json.RawMessage(`"function"`)
			changed = true
		}
		var fn map[string]json.RawMessage
		if json.Unmarshal(tc["function"], &fn) != nil {
			return false, fmt.Errorf("tool call %d has no function object", j)
		}
		args := bytes.TrimSpace(fn["arguments"])
		switch {
		case len(args) == 0 || args[0] == '"' || string(args) == "null":
		case args[0] == '{':
			// The exact bytes the model sent, as the string OpenAI sends.
			fn["arguments"] = mustJSON(string(args))
			tc["function"] = mustJSON(fn)
			changed = true
		default:
			return false, fmt.Errorf("tool call %d (%s) has arguments that are neither a JSON object nor a string: %s",
				j, string(fn["name"]), oneLine(string(args), 80))
		}
	}
	if changed {
		msg["tool_calls"] = mustJSON(calls)
	}
	return changed, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null" || string(t) == "[]"
}

// mustJSON marshals values built from decoded JSON; that cannot fail.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}
