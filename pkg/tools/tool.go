// Package tools defines what a tool is, how the registry resolves AGENT_TOOLS,
// and the two safety gates (docs/ARCHITECTURE.md). A tool never lets an error or
// a panic escape to the model: it answers "ERROR: …" text instead.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sashabaranov/go-openai/jsonschema"
)

// Tool is one function the model may call.
type Tool interface {
	Name() string
	Description() string
	// Parameters is the JSON schema of the arguments object.
	Parameters() json.RawMessage
	// Mutating reports whether the tool can change anything outside the run
	// (the cluster, a Git repository, a pull request).
	Mutating() bool
	// Run executes the tool. A returned error is shown to the model as
	// "ERROR: <err>"; it is data, not a failure of the run.
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// Func is a Tool whose arguments are the Go type A: one type gives both the
// schema the model sees and the strict parser of what it sends.
type Func[A any] struct {
	name, desc string
	mutating   bool
	schema     json.RawMessage
	fn         func(ctx context.Context, args A) (string, error)
}

// New builds a typed tool. The schema is generated from A's json and
// jsonschema struct tags (`jsonschema:"description=…,enum=a,enum=b"` is not
// supported by go-openai; use `description:"…"` and `enum:"a,b"`).
func New[A any](name, description string, mutating bool, fn func(ctx context.Context, args A) (string, error)) *Func[A] {
	var zero A
	def, err := jsonschema.GenerateSchemaForType(zero)
	if err != nil {
		panic(fmt.Sprintf("tools: schema for %s: %v", name, err))
	}
	closedByDefault(def)
	raw, err := json.Marshal(def)
	if err != nil {
		panic(fmt.Sprintf("tools: schema for %s: %v", name, err))
	}
	return &Func[A]{name: name, desc: description, mutating: mutating, schema: raw, fn: fn}
}

// closedByDefault drops the additionalProperties:false go-openai writes on
// every object. Every call pays for each copy (docs/MANUAL.md, "Model cost"), and
// it adds nothing: Run refuses unknown fields whatever the schema says, a
// model not in strict mode is not held to it, and llama.cpp's grammar
// treats an object without additionalProperties as closed.
func closedByDefault(d *jsonschema.Definition) {
	if b, ok := d.AdditionalProperties.(bool); ok && !b {
		d.AdditionalProperties = nil
	}
	for k, p := range d.Properties {
		closedByDefault(&p)
		d.Properties[k] = p
	}
	if d.Items != nil {
		closedByDefault(d.Items)
	}
	for k, p := range d.Defs {
		closedByDefault(&p)
		d.Defs[k] = p
	}
}

func (f *Func[A]) Name() string                { return f.name }
func (f *Func[A]) Description() string         { return f.desc }
func (f *Func[A]) Parameters() json.RawMessage { return f.schema }
func (f *Func[A]) Mutating() bool              { return f.mutating }

// Run parses args strictly (unknown fields are an error) and calls fn.
func (f *Func[A]) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a A
	if err := DecodeArgs(args, &a); err != nil {
		return "", err
	}
	return f.fn(ctx, a)
}

// DecodeArgs parses a model's JSON arguments into v, refusing unknown fields
// and trailing data. Empty arguments mean {}.
func DecodeArgs(args json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return fmt.Errorf("invalid arguments: trailing data after the JSON object")
	}
	return nil
}

// Alias returns t under another name: the same function, a second name. It
// exists so tests (and operators) can show that the execution gate cannot be
// bypassed by naming a mutating function differently.
func Alias(name string, t Tool) Tool { return aliased{name: name, Tool: t} }

type aliased struct {
	name string
	Tool
}

func (a aliased) Name() string { return a.name }
