package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

// remote is one tool of an MCP server, as the agent's registry holds it.
type remote struct {
	srv      *server
	tool     *mcp.Tool
	name     string // <server>_<tool>, safe as a model's function name
	readOnly bool
	schema   json.RawMessage
	resolved *jsonschema.Resolved
	o        Options
}

var _ tools.Tool = (*remote)(nil)

var unsafeRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// newRemote adapts tl; nil with why when it cannot be offered to a model.
func newRemote(s *server, tl *mcp.Tool, o Options) (*remote, string) {
	name := s.spec.Name + "_" + unsafeRE.ReplaceAllString(tl.Name, "_")
	if len(name) > 64 { // the OpenAI function-name limit
		return nil, "the name is longer than 64 characters with its prefix"
	}
	raw, err := json.Marshal(tl.InputSchema)
	if err != nil || tl.InputSchema == nil {
		raw = []byte(`{"type":"object","properties":{}}`)
	}
	raw = withoutDraft(raw)
	var sch jsonschema.Schema
	if err := json.Unmarshal(raw, &sch); err != nil {
		return nil, "its input schema does not parse: " + err.Error()
	}
	if sch.Type != "object" {
		return nil, fmt.Sprintf("its input schema is of type %q, not object", sch.Type)
	}
	res, err := sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	if err != nil {
		return nil, "its input schema does not resolve: " + err.Error()
	}
	ro := tl.Annotations != nil && tl.Annotations.ReadOnlyHint && allowed(o.ReadTools, name)
	return &remote{srv: s, tool: tl, name: name, readOnly: ro, schema: raw, resolved: res, o: o}, ""
}

// withoutDraft drops a schema's top-level "$schema": servers written with
// zod declare draft-07, the validator speaks 2020-12, and for the object
// schemas of tool arguments the two agree.
func withoutDraft(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["$schema"]; !ok {
		return raw
	}
	delete(m, "$schema")
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

func (r *remote) Name() string { return r.name }

func (r *remote) Description() string {
	d := strings.TrimSpace(r.tool.Description)
	if d == "" {
		d = r.tool.Title
	}
	return fmt.Sprintf("[MCP server %s, tool %s] %s", r.srv.spec.Name, r.tool.Name, d)
}

func (r *remote) Parameters() json.RawMessage { return r.schema }

// Mutating: everything not both annotated read-only and allowed.
func (r *remote) Mutating() bool { return !r.readOnly }

// AutonomousReadOnly lets the name gate give the tool to an autonomous run
// (tools.AutonomousReader): only a read-only one.
func (r *remote) AutonomousReadOnly() bool { return r.readOnly }

// Action is what the execution gate is asked before a mutating call.
func (r *remote) Action() tools.Action { return tools.Action("mcp." + r.name) }

// Run validates args against the server's schema, asks the execution gate
// for anything not read-only, and calls the tool. A server's error result
// comes back as an error (ERROR text for the model).
func (r *remote) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a map[string]any
	if err := tools.DecodeArgs(args, &a); err != nil {
		return "", err
	}
	if a == nil {
		a = map[string]any{}
	}
	if err := r.resolved.Validate(a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if !r.readOnly {
		if err := tools.Check(ctx, r.Action()); err != nil {
			return "", err
		}
	}
	if r.srv.session == nil {
		return "", fmt.Errorf("MCP server %s is not connected", r.srv.spec.Name)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, r.o.CallTimeout,
		fmt.Errorf("MCP server %s did not answer %s within %s", r.srv.spec.Name, r.tool.Name, r.o.CallTimeout))
	defer cancel()
	res, err := r.srv.session.CallTool(ctx, &mcp.CallToolParams{Name: r.tool.Name, Arguments: a})
	if err != nil {
		if c := context.Cause(ctx); c != nil && errors.Is(err, context.DeadlineExceeded) {
			return "", c
		}
		return "", fmt.Errorf("MCP server %s: %w", r.srv.spec.Name, err)
	}
	text := Flatten(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// Flatten turns a result into the text a model reads: text as it is, a
// resource's text with its URI, binary content (images, audio, blobs)
// named and sized but not inlined, structured content as JSON when there
// is no text.
func Flatten(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", v.URI, firstOf(v.Title, v.Name, v.Description)))
		case *mcp.EmbeddedResource:
			if v.Resource == nil {
				continue
			}
			if v.Resource.Text != "" {
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", v.Resource.URI, v.Resource.Text))
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes, not shown]", v.Resource.URI, v.Resource.MIMEType, len(v.Resource.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content, not shown]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
