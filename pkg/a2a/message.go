package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// MaxTextChars bounds the text of one message (the run engine refuses longer
// tasks too).
const MaxTextChars = 20000

// DataKeyFinding is the data part key a delegated finding travels under:
// {"finding": Finding}.
const DataKeyFinding = "finding"

// NewMessage builds a user message: one text part, and a data part
// {"finding": …} when f is set.
func NewMessage(text string, f *api.Finding, m Meta) *sdk.Message {
	parts := []sdk.Part{sdk.TextPart{Text: text}}
	if f != nil {
		parts = append(parts, sdk.DataPart{Data: map[string]any{DataKeyFinding: findingMap(*f)}})
	}
	msg := sdk.NewMessage(sdk.MessageRoleUser, parts...)
	msg.Metadata = m.Map()
	if m.DiscussionID != "" {
		msg.ContextID = m.DiscussionID
	}
	return msg
}

// findingMap turns a finding into the generic JSON object a data part holds.
func findingMap(f api.Finding) map[string]any {
	var out map[string]any
	raw, _ := json.Marshal(f)
	_ = json.Unmarshal(raw, &out)
	return out
}

// Incoming is what a received message says.
type Incoming struct {
	// Text is the text parts joined by blank lines, control and format
	// characters removed.
	Text string
	// Finding is the data part's "finding", validated.
	Finding *api.Finding
	// Data holds the other keys of the data parts.
	Data map[string]any
}

// ParseMessage reads a received message. File parts, an empty message, a
// malformed finding or text over MaxTextChars are errors that say so.
func ParseMessage(msg *sdk.Message) (Incoming, error) {
	var in Incoming
	if msg == nil {
		return in, errors.New("message is required")
	}
	if len(msg.Parts) == 0 {
		return in, errors.New("message has no parts: send a text part (and optionally a data part {\"finding\": …})")
	}
	var texts []string
	for i, p := range msg.Parts {
		switch part := p.(type) {
		case sdk.TextPart:
			if t := strings.TrimSpace(part.Text); t != "" {
				texts = append(texts, t)
			}
		case *sdk.TextPart:
			if t := strings.TrimSpace(part.Text); t != "" {
				texts = append(texts, t)
			}
		case sdk.DataPart:
			if err := in.addData(part.Data); err != nil {
				return Incoming{}, fmt.Errorf("part %d: %w", i, err)
			}
		case *sdk.DataPart:
			if err := in.addData(part.Data); err != nil {
				return Incoming{}, fmt.Errorf("part %d: %w", i, err)
			}
		default:
			return Incoming{}, fmt.Errorf("part %d: %T is not supported; send text and data parts", i, p)
		}
	}
	in.Text = safetext.CleanBlock(strings.Join(texts, "\n\n"), 0)
	if n := len([]rune(in.Text)); n > MaxTextChars {
		return Incoming{}, fmt.Errorf("message text is %d characters; the limit is %d", n, MaxTextChars)
	}
	if in.Text == "" && in.Finding == nil {
		return Incoming{}, errors.New("message has no text: say what you want in a text part")
	}
	return in, nil
}

func (in *Incoming) addData(d map[string]any) error {
	for k, v := range d {
		if k != DataKeyFinding {
			if in.Data == nil {
				in.Data = map[string]any{}
			}
			in.Data[k] = v
			continue
		}
		if in.Finding != nil {
			return errors.New("more than one finding: delegate one finding per message")
		}
		f, err := DecodeFinding(v)
		if err != nil {
			return err
		}
		in.Finding = &f
	}
	return nil
}

// DecodeFinding validates a finding received as JSON (a data part's value):
// kind, namespace, name and reason are required, the severity must be one
// of the four, free text is cleaned and bounded, and the key is derived
// when missing or different (the key names the GitOps branch, so it must
// come from the fields, not from the sender).
func DecodeFinding(v any) (api.Finding, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return api.Finding{}, fmt.Errorf("finding: %w", err)
	}
	var f api.Finding
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return api.Finding{}, fmt.Errorf("finding is not a Finding object: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return NormalizeFinding(f)
}

// NormalizeFinding checks and cleans a finding (see DecodeFinding).
func NormalizeFinding(f api.Finding) (api.Finding, error) {
	// The same bounds as the run engine's findings.
	f.Kind = safetext.Clean(f.Kind, 63)
	f.Namespace = safetext.Clean(f.Namespace, 253)
	f.Name = safetext.Clean(f.Name, 253)
	f.Container = safetext.Clean(f.Container, 253)
	f.Reason = safetext.Clean(f.Reason, 200)
	f.Severity = strings.ToLower(safetext.Clean(f.Severity, 20))
	f.Detail = safetext.Clean(f.Detail, 1000)
	f.Remediation = safetext.Clean(f.Remediation, 1000)
	if cc := f.ConfigChange; cc != nil {
		f.ConfigChange = &api.ConfigChange{Kind: safetext.Clean(cc.Kind, 63), Name: safetext.Clean(cc.Name, 253),
			ChangedAt: cc.ChangedAt, PodsStartedAt: cc.PodsStartedAt}
	}
	if k := f.OOMKill; k != nil {
		f.OOMKill = &api.OOMKill{Pod: safetext.Clean(k.Pod, 253), Container: safetext.Clean(k.Container, 253),
			Limit: safetext.Clean(k.Limit, 40), At: k.At}
	}
	var missing []string
	for _, c := range []struct{ name, v string }{{"kind", f.Kind}, {"namespace", f.Namespace}, {"name", f.Name}, {"reason", f.Reason}} {
		if c.v == "" {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return api.Finding{}, fmt.Errorf("finding lacks %s", strings.Join(missing, ", "))
	}
	if !api.ValidSeverity(f.Severity) {
		return api.Finding{}, fmt.Errorf("finding severity %q is not one of critical, high, medium, low", f.Severity)
	}
	if f.Confidence < 0 || f.Confidence > 1 {
		return api.Finding{}, fmt.Errorf("finding confidence %v is not between 0 and 1", f.Confidence)
	}
	f.Key = f.DeriveKey()
	return f, nil
}
