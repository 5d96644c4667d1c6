package llm

import (
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Structured output falls back, per endpoint: json_schema → json_object →
// no response_format (the caller parses the JSON out of the prose). Some
// OpenAI-compatible servers refuse a strict json_schema (older llama.cpp
// and ik_llama.cpp answer 500 "response_format type must be one of "text"
// or "json_object"", Azure before api-version 2024-08-01-preview answers
// 400, vLLM answers 400 for a schema its grammar backend cannot compile),
// and some refuse json_object (LM Studio: "'response_format.type' must be
// 'json_schema' or 'text'"). Such an answer makes the client send the
// request again at the next level, to the same endpoint, and remember the
// level for the client's lifetime. These resends are outside the one-retry
// budget: each happens at most twice per endpoint, ever.

// Levels of structured output, from the strictest.
const (
	formatAsAsked = iota // what the caller asked for
	formatJSONObject
	formatNone
)

// formatLevel is the level of a request's response format as asked.
func formatLevel(f *openai.ChatCompletionResponseFormat) int {
	switch {
	case f == nil || f.Type == openai.ChatCompletionResponseFormatTypeText || f.Type == "":
		return formatNone
	case f.Type == openai.ChatCompletionResponseFormatTypeJSONObject:
		return formatJSONObject
	}
	return formatAsAsked
}

// FormatName names a structured-output level for logs and traces.
func formatName(level int) string {
	switch level {
	case formatJSONObject:
		return "json_object"
	case formatNone:
		return "prose"
	}
	return "json_schema"
}

// formatRejected reports whether a failed attempt of a request that asked
// for a response format was the server refusing that format: a 4xx or 5xx
// whose message is about response_format, JSON schemas or grammars.
func formatRejected(e *Error) bool {
	if e.Kind != KindHTTP4xx && e.Kind != KindHTTP5xx {
		return false
	}
	msg := strings.ToLower(e.Msg)
	for _, s := range []string{"response_format", "json_schema", "json schema", "json_object", "structured output", "grammar", "guided_json"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// downgradeFormat rewrites req for level: json_object keeps the schema as
// an instruction in the first system message; none drops response_format
// and asks for the bare JSON object there. Messages are copied, never
// changed in place.
func downgradeFormat(req openai.ChatCompletionRequest, level int) openai.ChatCompletionRequest {
	asked := req.ResponseFormat
	if asked == nil || level <= formatLevel(asked) {
		return req
	}
	line := "Answer with one JSON object only, no prose or code fence around it."
	if asked.JSONSchema != nil && asked.JSONSchema.Schema != nil {
		if raw, err := json.Marshal(asked.JSONSchema.Schema); err == nil {
			line = "Answer with one JSON object only, no prose or code fence around it, matching this JSON Schema:\n" + string(raw)
		}
	}
	if level == formatJSONObject {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	} else {
		req.ResponseFormat = nil
	}
	msgs := append([]openai.ChatCompletionMessage(nil), req.Messages...)
	// Chat templates of several open models accept one system message and
	// only first, so the instruction joins it instead of adding another.
	if len(msgs) > 0 && msgs[0].Role == openai.ChatMessageRoleSystem {
		msgs[0].Content = strings.TrimRight(msgs[0].Content, "\n") + "\n\n" + line
	} else {
		msgs = append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: line}}, msgs...)
	}
	req.Messages = msgs
	return req
}
