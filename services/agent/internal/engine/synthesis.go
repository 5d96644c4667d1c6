package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// DiagnosticReport is what the synthesis pass asks the model for.
type DiagnosticReport struct {
	Healthy  bool          `json:"healthy" description:"true when nothing is wrong"`
	Findings []api.Finding `json:"findings" description:"every distinct problem, one finding each"`
	Verdict  string        `json:"verdict" description:"healthy, issues_found, delegated, action_taken, refused (may not act: read-only, a gate, a settle window), recommendation, approve, request_changes or comment"`
	Summary  string        `json:"summary" description:"one or two sentences"`
}

const synthesisPrompt = `You turn an agent's transcript into a DiagnosticReport.
Use only evidence in the transcript. Record every distinct problem as its own finding; do not merge unrelated problems.
Severity is one of critical, high, medium, low. If nothing is wrong set healthy=true and findings=[].
Answer with the JSON object only.`

var reportSchema = func() json.RawMessage {
	def, err := jsonschema.GenerateSchemaForType(DiagnosticReport{})
	if err != nil {
		panic(err)
	}
	raw, _ := json.Marshal(def)
	return raw
}()

// synthesize runs the narrow second pass, with one retry. It returns nil
// when both attempts fail; the caller falls back.
func (e *Engine) synthesize(ctx context.Context, r *Run, o *outcome, msgs []openai.ChatCompletionMessage) *DiagnosticReport {
	if ctx.Err() != nil {
		return nil
	}
	transcript := renderTranscript(msgs)
	req := openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: synthesisPrompt},
			{Role: openai.ChatMessageRoleUser, Content: transcript},
		},
		Temperature: e.opts.Temperature,
		ResponseFormat: &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name: "DiagnosticReport", Schema: rawSchema(reportSchema), Strict: true,
			},
		},
	}
	for attempt := 1; attempt <= 2; attempt++ {
		actx, cancel := context.WithTimeoutCause(ctx, e.opts.SynthesisTimeout,
			fmt.Errorf("synthesis attempt %d exceeded SYNTHESIS_TIMEOUT (%s)", attempt, e.opts.SynthesisTimeout))
		resp, endpoint, err := e.opts.Model.Chat(actx, req)
		cancel()
		if err == nil {
			e.account(r, o, passSynthesis, resp.Usage)
		}
		var rep *DiagnosticReport
		if err == nil {
			if len(resp.Choices) == 0 {
				err = fmt.Errorf("no choices")
			} else if msg := resp.Choices[0].Message; msg.Refusal != "" {
				// A refusal is the model's answer, not a glitch: asking again
				// gets it again. The prose of the loop still delivers.
				r.Event(ctx, "synthesis", map[string]any{"attempt": attempt, "endpoint": endpoint, "refusal": msg.Refusal})
				o.synthErr = fmt.Errorf("the model refused the report pass: %s", msg.Refusal)
				return nil
			} else {
				reasoning := stripReasoning(&msg)
				if rep, err = parseReport(msg.Content); err == nil {
					ev := map[string]any{"attempt": attempt, "endpoint": endpoint, "findings": len(rep.Findings), "verdict": rep.Verdict}
					if reasoning != "" {
						ev["reasoning"] = cutMiddle(reasoning, e.opts.MaxReplyChars, func(cut int) string {
							return fmt.Sprintf("[… %d characters of reasoning cut …]", cut)
						})
					}
					r.Event(ctx, "synthesis", ev)
					o.synthErr = nil
					return rep
				}
			}
		}
		r.Event(ctx, "synthesis", map[string]any{"attempt": attempt, "error": err.Error()})
		o.synthErr = fmt.Errorf("the report pass failed: %w", err)
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// answerReport is the report the loop's final answer closes with (the
// output contract's last fenced json block), or nil when it has none: a
// block counts as the report when it has the report's verdict and findings
// and its healthy or summary, and a verdict is stated. The older optional
// block ({"verdict", "findings"}) is read as prose findings, not as it.
func answerReport(answer string) *DiagnosticReport {
	blocks := fenced.FindAllStringSubmatch(answer, -1)
	if len(blocks) == 0 {
		return nil
	}
	raw := []byte(blocks[len(blocks)-1][1])
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return nil
	}
	_, verdict := keys["verdict"]
	_, findings := keys["findings"]
	_, healthy := keys["healthy"]
	_, summary := keys["summary"]
	var rep DiagnosticReport
	if !verdict || !findings || !(healthy || summary) || json.Unmarshal(raw, &rep) != nil || strings.TrimSpace(rep.Verdict) == "" {
		return nil
	}
	return &rep
}

type rawSchema json.RawMessage

func (s rawSchema) MarshalJSON() ([]byte, error) { return s, nil }

// parseReport reads the report from the answer: the JSON object itself
// (json_schema, json_object), or the first JSON object in prose or in a
// code fence (a server that took neither format; pkg/llm falls back to
// none).
func parseReport(s string) (*DiagnosticReport, error) {
	s = strings.TrimSpace(s)
	if m := fenced.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	var firstErr error
	for start := strings.IndexByte(s, '{'); start >= 0; {
		var rep DiagnosticReport
		err := json.NewDecoder(strings.NewReader(s[start:])).Decode(&rep)
		if err == nil {
			return &rep, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		next := strings.IndexByte(s[start+1:], '{')
		if next < 0 {
			break
		}
		start += 1 + next
	}
	if firstErr == nil {
		firstErr = errors.New("no JSON object in the answer")
	}
	return nil, fmt.Errorf("synthesis did not return the JSON report: %w", firstErr)
}

func renderTranscript(msgs []openai.ChatCompletionMessage) string {
	var b strings.Builder
	for _, m := range msgs[1:] { // the system prompt is not evidence
		switch m.Role {
		case openai.ChatMessageRoleTool:
			fmt.Fprintf(&b, "[tool %s result]\n%s\n\n", m.Name, m.Content)
		case openai.ChatMessageRoleAssistant:
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "[assistant called %s %s]\n", tc.Function.Name, tc.Function.Arguments)
			}
			if m.Content != "" {
				fmt.Fprintf(&b, "[assistant]\n%s\n\n", m.Content)
			}
		default:
			fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
		}
	}
	return b.String()
}

// deliver applies the delivery precedence: findings recorded by
// report_finding (or a playbook) > synthesis findings > findings parsed from
// the cleaned prose. It returns the findings and which source won.
func deliver(reported []api.Finding, syn *DiagnosticReport, answer string) ([]api.Finding, string) {
	if len(reported) > 0 {
		return api.SortFindings(reported), "report_finding"
	}
	if syn != nil && len(syn.Findings) > 0 {
		return api.SortFindings(normalizeAll(syn.Findings)), "synthesis"
	}
	if fs := proseFindings(answer); len(fs) > 0 {
		return api.SortFindings(normalizeAll(fs)), "prose"
	}
	return nil, "none"
}

var fenced = regexp.MustCompile("(?s)```(?:json)?\\s*\\n(.*?)\\n```")

// proseFindings reads the optional trailing JSON block of the output
// contract ({"verdict", "findings"}), or an answer that is itself JSON.
func proseFindings(answer string) []api.Finding {
	blocks := fenced.FindAllStringSubmatch(answer, -1)
	cands := []string{}
	for i := len(blocks) - 1; i >= 0; i-- {
		cands = append(cands, blocks[i][1])
	}
	cands = append(cands, strings.TrimSpace(answer))
	for _, c := range cands {
		var v struct {
			Findings []api.Finding `json:"findings"`
		}
		if json.Unmarshal([]byte(c), &v) == nil && len(v.Findings) > 0 {
			return v.Findings
		}
	}
	return nil
}

func normalizeAll(fs []api.Finding) []api.Finding {
	out := make([]api.Finding, 0, len(fs))
	for _, f := range fs {
		out = append(out, normalizeFinding(f))
	}
	return out
}

// normalizeFinding cleans model-provided text and fills the key.
func normalizeFinding(f api.Finding) api.Finding {
	f.Severity = strings.ToLower(strings.TrimSpace(f.Severity))
	if !api.ValidSeverity(f.Severity) {
		f.Severity = api.SeverityMedium
	}
	f.Kind = safetext.Clean(f.Kind, 63)
	f.Namespace = safetext.Clean(f.Namespace, 253)
	f.Name = safetext.Clean(f.Name, 253)
	f.Container = safetext.Clean(f.Container, 253)
	f.Reason = safetext.Clean(f.Reason, 200)
	f.Detail = safetext.Clean(f.Detail, 1000)
	f.Remediation = safetext.Clean(f.Remediation, 1000)
	if f.Confidence < 0 || f.Confidence > 1 {
		f.Confidence = 0
	}
	if strings.TrimSpace(f.Key) == "" {
		f.Key = f.DeriveKey()
	} else {
		f.Key = safetext.Clean(f.Key, 200)
	}
	return f
}

// cleanAnswer strips a trailing output-contract JSON block that only carried
// findings, and surrounding space, so the answer reads as prose.
func cleanAnswer(s string) string {
	s = strings.TrimSpace(s)
	if loc := fenced.FindAllStringIndex(s, -1); len(loc) > 0 {
		last := loc[len(loc)-1]
		if last[1] == len(s) && last[0] > 0 {
			s = strings.TrimSpace(s[:last[0]])
		}
	}
	return s
}
