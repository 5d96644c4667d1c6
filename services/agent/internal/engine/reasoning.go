package engine

import (
	"regexp"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Reasoning models send their chain of thought with the answer: in
// reasoning_content (vLLM, llama.cpp, DeepSeek; Ollama's and newer vLLM's
// "reasoning", which pkg/llm moves there) or inline in the content between
// <think> tags (a server without a reasoning parser). It is kept in the
// trace and taken out of the answer and of the transcript sent back (the
// DeepSeek API refuses reasoning_content in a request; it is not evidence).

var thinkRE = regexp.MustCompile(`(?s)<(think|thinking)>(.*?)</(?:think|thinking)>`)

// stripReasoning removes the reasoning from msg and returns it.
func stripReasoning(msg *openai.ChatCompletionMessage) string {
	var parts []string
	if s := strings.TrimSpace(msg.ReasoningContent); s != "" {
		parts = append(parts, s)
	}
	msg.ReasoningContent = ""
	content, inline := splitThink(msg.Content)
	if inline != "" {
		parts = append(parts, inline)
		msg.Content = content
	}
	return strings.Join(parts, "\n\n")
}

// splitThink separates inline reasoning from an answer: <think>…</think>
// blocks; a closing tag with no opening one (the chat template opened it
// in the prompt: all before it is reasoning); an opening tag never closed
// (the reply ran out: all after it is reasoning).
func splitThink(s string) (answer, reasoning string) {
	if !strings.Contains(s, "think") {
		return s, ""
	}
	var parts []string
	s = thinkRE.ReplaceAllStringFunc(s, func(m string) string {
		parts = append(parts, strings.TrimSpace(thinkRE.FindStringSubmatch(m)[2]))
		return ""
	})
	for _, closing := range []string{"</think>", "</thinking>"} {
		if i := strings.LastIndex(s, closing); i >= 0 {
			parts = append([]string{strings.TrimSpace(s[:i])}, parts...)
			s = s[i+len(closing):]
		}
	}
	for _, opening := range []string{"<think>", "<thinking>"} {
		if i := strings.Index(s, opening); i >= 0 {
			parts = append(parts, strings.TrimSpace(s[i+len(opening):]))
			s = s[:i]
		}
	}
	if len(parts) == 0 {
		return s, ""
	}
	return strings.TrimSpace(s), strings.TrimSpace(strings.Join(parts, "\n\n"))
}
