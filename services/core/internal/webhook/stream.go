package webhook

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	json "github.com/go-json-experiment/json/v1"
)

// streamAfter is the body size past which Decode streams: a body up to it
// is read whole and decoded in one pass (the hot path, BenchmarkDecode);
// a storm's larger one is read alert by alert and each alert is kept
// within Bound as it is read, so what the core holds is the bounded
// copies, never the body (docs/MANUAL.md, "Storms").
var streamAfter = 1 << 20

// messageFields are Message's JSON names but alerts.
var messageFields = []string{"version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels",
	"commonLabels", "commonAnnotations", "externalURL", "notification_reason"}

// decodeStream decodes a webhook body from r alert by alert, with
// encoding/json's semantics (names in any case, the last of duplicate
// names, invalid UTF-8 replaced) and Decode's errors.
func decodeStream(r io.Reader) (Message, error) {
	dec := jsontext.NewDecoder(r, json.DefaultOptionsV1())
	var m Message
	tok, err := dec.ReadToken()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Message{}, badf("empty body: want an Alertmanager webhook (version 4)")
		}
		return Message{}, streamError(err)
	}
	if tok.Kind() != '{' {
		return Message{}, badf("malformed webhook: got JSON %s, want an object", kindName(tok.Kind()))
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return Message{}, streamError(err)
		}
		name := tok.String() // a token lives until the next read
		if strings.EqualFold(name, "alerts") {
			if m.Alerts, err = decodeAlerts(dec); err != nil {
				return Message{}, err
			}
			continue
		}
		val, err := dec.ReadValue()
		if err != nil {
			return Message{}, streamError(err)
		}
		if !slices.ContainsFunc(messageFields, func(f string) bool { return strings.EqualFold(f, name) }) {
			continue // an unknown field is accepted, as a whole body's is
		}
		// One field at a time through the one-pass decoder: the same
		// types and errors as a whole body (name is one of the ASCII
		// names above, in some case, so quoting it keeps it).
		field := make([]byte, 0, len(val)+len(name)+8)
		field = append(field, '{')
		field = strconv.AppendQuote(field, name)
		field = append(field, ':')
		field = append(field, val...)
		field = append(field, '}')
		if err := json.Unmarshal(field, &m); err != nil {
			return Message{}, fieldError(err)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return Message{}, streamError(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if tooLarge(err) {
			return Message{}, streamError(err)
		}
		return Message{}, badf("malformed JSON: data after the webhook object")
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// decodeAlerts reads the alerts array, keeping each alert within Bound as
// it is read (its content hash is taken of the whole alert first).
func decodeAlerts(dec *jsontext.Decoder) ([]Alert, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, streamError(err)
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case '[':
	default:
		return nil, badf("malformed webhook: field %q: got JSON %s, want array", "alerts", kindName(tok.Kind()))
	}
	alerts := []Alert{}
	for i := 0; dec.PeekKind() != ']'; i++ {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, streamError(err)
		}
		var a Alert
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fieldError(err)
		}
		if !utf8.Valid(raw) {
			a.markInvalidUTF8()
		}
		if !withinBounds(a.Annotations) {
			a.hash = a.ContentHash()
		}
		alerts = append(alerts, Bound(a))
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, streamError(err)
	}
	return alerts, nil
}

// streamError is a read or syntax error of the stream as Decode says it.
func streamError(err error) error {
	if tooLarge(err) {
		return tooLargeError(err)
	}
	var se *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		return badf("malformed JSON at byte %d: %v", se.ByteOffset, se)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badf("malformed JSON: unexpected end of the body")
	}
	return badf("malformed JSON: %v", err)
}

// fieldError is a value of the wrong type, as Decode says it.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return badf("malformed webhook: field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return badf("malformed JSON: %v", err)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '[':
		return "array"
	}
	return "object"
}
