package deployreview

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Ada's API design review: OA001–OA005 on OpenAPI 3.x and Swagger 2.0
// documents, SV001–SV003 on Services and the workloads behind them. The
// documents are walked as yaml.v3 nodes (JSON is YAML), so every finding
// names its line; local $refs (#/components/…, #/definitions/…) are
// followed, remote ones are not judged. A maintained OpenAPI library
// (kin-openapi, libopenapi) would resolve more but loses the line numbers
// a finding must carry, and the rules read only a handful of fields.

var apiDesign = ruleSet{title: "API design review", classify: classifyAPI, file: apiFile, objects: checkServices}

// classifyAPI: YAML files (OpenAPI documents or manifests) and JSON files
// (OpenAPI documents), outside CI workflows and the config file.
func classifyAPI(p string) string {
	if p == ConfigPath || strings.HasPrefix(p, ".github/") {
		return ""
	}
	switch path.Ext(p) {
	case ".yaml", ".yml":
		return kindManifest
	case ".json":
		return kindJSON
	}
	return ""
}

func apiFile(p, kind string, raw []byte) ([]Finding, *manifestFile, error) {
	docs, err := decodeDocs(raw)
	if len(docs) > 0 && isOpenAPI(docs[0]) {
		return checkOpenAPI(p, docs[0]), nil, nil
	}
	if kind == kindJSON {
		if err != nil && (bytes.Contains(raw, []byte(`"openapi"`)) || bytes.Contains(raw, []byte(`"swagger"`))) {
			return nil, nil, err // an API document that does not parse is named
		}
		return nil, nil, nil // package.json and friends
	}
	if err != nil {
		return nil, nil, err
	}
	m := manifestsOf(p, docs)
	return nil, &m, nil
}

func isOpenAPI(root *yaml.Node) bool {
	return get(root, "openapi") != nil || get(root, "swagger") != nil
}

// oaDoc is one OpenAPI document under review.
type oaDoc struct {
	file  string
	root  *yaml.Node
	out   []Finding
	names naming // parameter and property names
	segs  naming // static path segments
}

func checkOpenAPI(file string, root *yaml.Node) []Finding {
	d := &oaDoc{file: file, root: root}
	paths := get(root, "paths")
	for i := 0; paths != nil && i+1 < len(paths.Content); i += 2 {
		p, keyLine := paths.Content[i].Value, paths.Content[i].Line
		for _, seg := range strings.Split(p, "/") {
			if seg != "" && !strings.HasPrefix(seg, "{") {
				d.segs.add(seg, "path segment", keyLine)
			}
		}
		item, ok := d.resolve(paths.Content[i+1])
		if !ok {
			continue
		}
		pathParams := get(item, "parameters")
		for j := 0; j+1 < len(item.Content); j += 2 {
			m := strings.ToLower(item.Content[j].Value)
			if !httpMethods[m] {
				continue
			}
			d.operation(p, m, item.Content[j].Line, item.Content[j+1], pathParams)
		}
	}
	for _, group := range []string{"definitions", "components"} {
		schemas := get(root, group)
		if group == "components" {
			schemas = get(schemas, "schemas")
		}
		for i := 0; schemas != nil && i+1 < len(schemas.Content); i += 2 {
			d.properties(schemas.Content[i+1], 0)
		}
	}
	d.naming("OA003", "names", &d.names)
	d.naming("OA003", "path segments", &d.segs)
	return d.out
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true, "trace": true}

var mutating = map[string]bool{"put": true, "post": true, "delete": true, "patch": true}

func (d *oaDoc) add(id string, line int, msg string) {
	f := finding(id, d.file, line, msg)
	f.Kind = "OpenAPI"
	d.out = append(d.out, f)
}

// resolve follows a local $ref (a few hops at most); ok is false for a
// remote or dangling one, which the rules do not judge.
func (d *oaDoc) resolve(n *yaml.Node) (*yaml.Node, bool) {
	for hop := 0; n != nil; hop++ {
		ref := get(n, "$ref")
		if ref == nil {
			return n, true
		}
		if hop == 8 || !strings.HasPrefix(ref.Value, "#/") {
			return n, false
		}
		t := d.root
		for _, k := range strings.Split(ref.Value[2:], "/") {
			t = get(t, strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~"))
		}
		n = t
	}
	return nil, false
}

// operation runs OA001, OA002, OA004 and OA005 on one operation and
// collects its parameter names for OA003.
func (d *oaDoc) operation(p, method string, line int, op, pathParams *yaml.Node) {
	label := strings.ToUpper(method) + " " + p
	params := d.params(pathParams, get(op, "parameters"))
	for _, prm := range params {
		if in := scalar(get(prm, "in")); in == "query" || in == "path" {
			d.names.add(scalar(get(prm, "name")), "parameter", keyLine(prm, "name"))
		}
	}
	responses := get(op, "responses")
	if !hasErrorResponse(responses) {
		d.add("OA001", line, label+" documents no error response")
	}
	if method == "get" && d.listResponse(p, responses) && !hasPagination(params) {
		d.add("OA002", line, label+" returns a list and takes no limit, page or cursor parameter")
	}
	if mutating[method] {
		d.auth(label, line, op)
	}
	if get(op, "x-max-body-size") == nil && get(d.root, "x-max-body-size") == nil {
		d.bodyLimit(label, op, params)
	}
}

// params are the path item's and the operation's parameters, resolved.
func (d *oaDoc) params(lists ...*yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for _, l := range lists {
		if l == nil || l.Kind != yaml.SequenceNode {
			continue
		}
		for _, p := range l.Content {
			if r, ok := d.resolve(p); ok && r.Kind == yaml.MappingNode {
				out = append(out, r)
			}
		}
	}
	return out
}

func hasErrorResponse(responses *yaml.Node) bool {
	for i := 0; responses != nil && i+1 < len(responses.Content); i += 2 {
		k := responses.Content[i].Value
		if k == "default" || strings.HasPrefix(k, "4") || strings.HasPrefix(k, "5") {
			return true
		}
	}
	return false
}

// listResponse: a collection path (its last segment is not a {parameter})
// whose success response is an array, or an object wrapping one in items,
// data, results, values, records or entries.
func (d *oaDoc) listResponse(p string, responses *yaml.Node) bool {
	if strings.HasSuffix(strings.TrimSuffix(p, "/"), "}") {
		return false
	}
	var ok *yaml.Node
	for i := 0; responses != nil && i+1 < len(responses.Content); i += 2 {
		if strings.HasPrefix(responses.Content[i].Value, "2") {
			ok = responses.Content[i+1]
			break
		}
	}
	resp, found := d.resolve(ok)
	if !found {
		return false
	}
	schemas := []*yaml.Node{get(resp, "schema")} // Swagger 2.0
	if content := get(resp, "content"); content != nil {
		for i := 1; i < len(content.Content); i += 2 {
			schemas = append(schemas, get(content.Content[i], "schema"))
		}
	}
	for _, s := range schemas {
		s, ok := d.resolve(s)
		if !ok {
			continue
		}
		if scalar(get(s, "type")) == "array" {
			return true
		}
		for _, wrap := range []string{"items", "data", "results", "values", "records", "entries"} {
			if w, ok := d.resolve(dig(s, "properties", wrap)); ok && scalar(get(w, "type")) == "array" {
				return true
			}
		}
	}
	return false
}

// paginationParams are query parameter names that page a list (compared
// lower-case without _ and -).
var paginationParams = map[string]bool{"limit": true, "pagesize": true, "perpage": true, "page": true, "pagenumber": true,
	"cursor": true, "offset": true, "pagetoken": true, "continue": true, "after": true, "before": true, "maxresults": true,
	"top": true, "skip": true, "first": true, "startingafter": true, "nexttoken": true, "marker": true}

func hasPagination(params []*yaml.Node) bool {
	for _, p := range params {
		if in := scalar(get(p, "in")); in != "" && in != "query" {
			continue
		}
		name := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(scalar(get(p, "name"))))
		if paginationParams[name] {
			return true
		}
	}
	return false
}

// auth runs OA004: the operation's security, else the document's, must
// name at least one scheme in every alternative.
func (d *oaDoc) auth(label string, line int, op *yaml.Node) {
	sec, where := get(op, "security"), "on the operation"
	if sec != nil {
		line = keyLine(op, "security")
	} else {
		sec, where = get(d.root, "security"), "globally"
	}
	switch {
	case sec == nil:
		d.add("OA004", line, label+" declares no security requirement (none on the operation, none global)")
	case sec.Kind != yaml.SequenceNode || len(sec.Content) == 0:
		d.add("OA004", line, label+" is anonymous: security is empty "+where)
	default:
		for _, alt := range sec.Content {
			if alt.Kind != yaml.MappingNode || len(alt.Content) == 0 {
				d.add("OA004", line, label+" makes authentication optional: an empty requirement {} "+where)
				return
			}
		}
	}
}

// bodyLimit runs OA005 on the request body (OpenAPI 3 requestBody, or a
// Swagger 2.0 body or file parameter).
func (d *oaDoc) bodyLimit(label string, op *yaml.Node, params []*yaml.Node) {
	type body struct {
		line   int
		schema *yaml.Node
	}
	var bodies []body
	if rb, ok := d.resolve(get(op, "requestBody")); ok && rb != nil {
		if get(rb, "x-max-body-size") != nil {
			return
		}
		content := get(rb, "content")
		for i := 1; content != nil && i < len(content.Content); i += 2 {
			bodies = append(bodies, body{keyLine(op, "requestBody"), get(content.Content[i], "schema")})
		}
	}
	for _, p := range params {
		switch in := scalar(get(p, "in")); {
		case in == "body":
			bodies = append(bodies, body{keyLine(p, "in"), get(p, "schema")})
		case in == "formData" && scalar(get(p, "type")) == "file":
			bodies = append(bodies, body{keyLine(p, "in"), p})
		}
	}
	for _, b := range bodies {
		if why := d.unbounded(b.schema, "body", 0); why != "" {
			d.add("OA005", b.line, label+" accepts a body with no size limit: "+why)
			return
		}
	}
}

// unbounded says which part of schema has no size limit ("" = bounded).
// Remote references and very deep nesting are not judged.
func (d *oaDoc) unbounded(n *yaml.Node, at string, depth int) string {
	s, ok := d.resolve(n)
	if !ok || depth > 6 || get(s, "enum") != nil || get(s, "const") != nil || get(s, "x-max-body-size") != nil {
		return ""
	}
	for _, comb := range []string{"allOf", "oneOf", "anyOf"} {
		if alts := get(s, comb); alts != nil && alts.Kind == yaml.SequenceNode {
			for _, a := range alts.Content {
				if why := d.unbounded(a, at, depth+1); why != "" {
					return why
				}
			}
			return ""
		}
	}
	t := scalar(get(s, "type"))
	switch t {
	case "integer", "number", "boolean", "null":
		return ""
	case "string":
		switch scalar(get(s, "format")) {
		case "date", "date-time", "time", "uuid", "ipv4", "ipv6":
			return ""
		}
		if get(s, "maxLength") == nil {
			return at + " is a string without maxLength"
		}
		return ""
	case "file":
		return at + " is a file upload (no limit in the document)"
	case "array":
		if get(s, "maxItems") == nil {
			return at + " is an array without maxItems"
		}
		return d.unbounded(get(s, "items"), at+"[]", depth+1)
	}
	props := get(s, "properties")
	if t == "" && props == nil {
		return at + " has no schema type"
	}
	if ap := get(s, "additionalProperties"); scalar(ap) != "false" {
		if get(s, "maxProperties") == nil {
			return at + " accepts any additional properties (no additionalProperties: false or maxProperties)"
		}
		if ap != nil && ap.Kind == yaml.MappingNode {
			if why := d.unbounded(ap, at+".*", depth+1); why != "" {
				return why
			}
		}
	}
	for i := 0; props != nil && i+1 < len(props.Content); i += 2 {
		if why := d.unbounded(props.Content[i+1], at+"."+props.Content[i].Value, depth+1); why != "" {
			return why
		}
	}
	return ""
}

// properties collects a schema's property names, nested ones included.
func (d *oaDoc) properties(n *yaml.Node, depth int) {
	s, ok := d.resolve(n)
	if !ok || depth > 4 || s == nil {
		return
	}
	props := get(s, "properties")
	for i := 0; props != nil && i+1 < len(props.Content); i += 2 {
		d.names.add(props.Content[i].Value, "property", props.Content[i].Line)
		if get(props.Content[i+1], "$ref") == nil {
			d.properties(props.Content[i+1], depth+1)
		}
	}
	if items := get(s, "items"); items != nil && get(items, "$ref") == nil {
		d.properties(items, depth+1)
	}
}

// naming is the names of one kind in a document by style, first
// occurrence kept.
type naming struct {
	seen   map[string]bool
	byName []namedAt
	counts map[string]int
}

type namedAt struct {
	name, what, style string
	line              int
}

func (n *naming) add(name, what string, line int) {
	st := nameStyle(name)
	if st == "" || n.seen[name] {
		return
	}
	if n.seen == nil {
		n.seen, n.counts = map[string]bool{}, map[string]int{}
	}
	n.seen[name] = true
	n.counts[st]++
	n.byName = append(n.byName, namedAt{name, what, st, line})
}

// nameStyle is snake_case, kebab-case or camelCase; "" for a single
// lower-case word (it fits every style) or anything else.
func nameStyle(s string) string {
	if s == "" || strings.HasPrefix(s, "x-") || strings.HasPrefix(s, "$") {
		return ""
	}
	lower, hasUpper := strings.ToLower(s) == s, false
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			hasUpper = true
		}
	}
	first := s[0]
	switch {
	case strings.Contains(s, "_") && lower:
		return "snake_case"
	case strings.Contains(s, "-") && lower:
		return "kebab-case"
	case hasUpper && first >= 'a' && first <= 'z' && !strings.ContainsAny(s, "_-."):
		return "camelCase"
	}
	return ""
}

// maxNamingFindings bounds OA003 per kind of name in one document.
const maxNamingFindings = 10

// naming runs OA003 over one kind of name: when styles mix, every name
// in a minority style is a finding (the first few).
func (d *oaDoc) naming(id, what string, n *naming) {
	if len(n.counts) < 2 {
		return
	}
	major, total := "", 0
	for _, st := range []string{"camelCase", "snake_case", "kebab-case"} {
		total += n.counts[st]
		if n.counts[st] > n.counts[major] {
			major = st
		}
	}
	reported := 0
	for _, x := range n.byName {
		if x.style == major {
			continue
		}
		if reported == maxNamingFindings {
			break
		}
		reported++
		d.add(id, x.line, fmt.Sprintf("%s %s is %s; %d of the document's %d styled %s are %s", x.what, x.name, x.style, n.counts[major], total, what, major))
	}
}
