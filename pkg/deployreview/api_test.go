package deployreview

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodAPI breaks no rule: every operation documents errors, the list
// pages, every mutation needs a token, every body is bounded.
const goodAPI = `openapi: 3.1.0
info: {title: shop, version: 1.0.0}
security: [{bearer: []}]
paths:
  /carts:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
        - {name: cursor, in: query, schema: {type: string, maxLength: 64}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Cart"}}}}}
        default: {description: error}
    post:
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/Cart"}}}}
      responses: {"201": {description: created}, "400": {description: bad}}
components:
  securitySchemes: {bearer: {type: http, scheme: bearer}}
  schemas:
    Cart:
      type: object
      additionalProperties: false
      properties:
        cart_id: {type: string, format: uuid}
        item_ids: {type: array, maxItems: 50, items: {type: string, maxLength: 36}}
`

const goodService = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: app
        image: ghcr.io/example/web:1.4.2
        readinessProbe: {httpGet: {path: /ready, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: 5}}}
`

// One table row per rule: the smallest change that breaks it, and
// exactly the file:line the rule must name.
func TestAPIRulesFileLine(t *testing.T) {
	t.Parallel()
	rep := strings.Replace
	tests := []struct {
		rule  string
		files memRepo
		want  []string
	}{
		{"a sound API and service", memRepo{"api/shop.yaml": goodAPI, "apps/web.yaml": goodService, "ui/package.json": `{"name": "ui"}`}, nil},
		{"OA001", memRepo{"api/shop.yaml": rep(goodAPI, `{"201": {description: created}, "400": {description: bad}}`, `{"201": {description: created}}`, 1)},
			[]string{"OA001 api/shop.yaml:13"}},
		{"OA001 in JSON", memRepo{"api/shop.json": `{"swagger": "2.0", "security": [{"k": []}],
 "paths": {"/ping": {"get": {"responses": {"200": {"description": "pong"}}}}}}`}, []string{"OA001 api/shop.json:2"}},
		{"OA002", memRepo{"api/shop.yaml": rep(goodAPI, "        - {name: limit, in: query, schema: {type: integer}}\n        - {name: cursor, in: query, schema: {type: string, maxLength: 64}}\n", "        - {name: q, in: query, schema: {type: string, maxLength: 64}}\n", 1)},
			[]string{"OA002 api/shop.yaml:6"}},
		{"OA002 a wrapped list in Swagger 2.0", memRepo{"api/v2.yaml": "swagger: '2.0'\nsecurity: [{key: []}]\npaths:\n  /users:\n    get:\n      responses:\n        '200': {description: ok, schema: {$ref: '#/definitions/Page'}}\n        '500': {description: down}\ndefinitions:\n  Page: {type: object, properties: {data: {type: array, items: {type: string}}}}\n"},
			[]string{"OA002 api/v2.yaml:5"}},
		{"OA003", memRepo{"api/shop.yaml": rep(rep(goodAPI, "        item_ids:", "        itemIds:", 1), "/carts:", "/shopping_carts:", 1) + "    Other: {type: object, properties: {created_at: {type: string}, total_cents: {type: integer}}}\n"},
			[]string{"OA003 api/shop.yaml:24"}},
		{"OA004 no security", memRepo{"api/shop.yaml": rep(goodAPI, "security: [{bearer: []}]\n", "", 1)},
			[]string{"OA004 api/shop.yaml:12"}},
		{"OA004 security: [] and {}", memRepo{"api/shop.yaml": rep(rep(goodAPI, "    post:\n", "    post:\n      security: [{}, {bearer: []}]\n", 1), "components:\n",
			"  /carts/{id}:\n    delete:\n      security: []\n      responses: {\"204\": {description: gone}, \"404\": {description: none}}\n    get:\n      security: []\n      responses: {\"200\": {description: ok}, \"404\": {description: none}}\ncomponents:\n", 1)},
			[]string{"OA004 api/shop.yaml:14", "OA004 api/shop.yaml:19"}},
		{"OA005", memRepo{"api/shop.yaml": rep(goodAPI, "item_ids: {type: array, maxItems: 50, ", "item_ids: {type: array, ", 1)},
			[]string{"OA005 api/shop.yaml:14"}},
		{"OA005 quiet with x-max-body-size", memRepo{"api/shop.yaml": rep(rep(goodAPI, "item_ids: {type: array, maxItems: 50, ", "item_ids: {type: array, ", 1), "    post:\n", "    post:\n      x-max-body-size: 1048576\n", 1)}, nil},
		{"OA005 an open object and a file upload", memRepo{"api/up.yaml": "swagger: '2.0'\nsecurity: [{key: []}]\npaths:\n  /files:\n    post:\n      parameters:\n        - {name: f, in: formData, type: file}\n      responses: {'201': {description: ok}, default: {description: err}}\n  /tags:\n    put:\n      parameters:\n        - name: body\n          in: body\n          schema: {type: object, properties: {name: {type: string, maxLength: 9}}}\n      responses: {'200': {description: ok}, default: {description: err}}\n"},
			[]string{"OA005 api/up.yaml:13", "OA005 api/up.yaml:7"}},
		{"SV001", memRepo{"apps/web.yaml": rep(goodService, "        readinessProbe: {httpGet: {path: /ready, port: 8080}}\n", "", 1)}, []string{"SV001 apps/web.yaml:17"}},
		{"SV001 quiet for a workload no Service selects", memRepo{"apps/web.yaml": rep(rep(goodService, "        readinessProbe: {httpGet: {path: /ready, port: 8080}}\n", "", 1), "selector: {app: web}", "selector: {app: web, tier: edge}", 1)}, nil},
		{"SV002", memRepo{"apps/web.yaml": rep(goodService, "terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: 2", 1)}, []string{"SV002 apps/web.yaml:15"}},
		{"SV003", memRepo{"apps/web.yaml": rep(goodService, "        lifecycle: {preStop: {sleep: {seconds: 5}}}\n", "", 1)}, []string{"SV003 apps/web.yaml:17"}},
		{"SV003 quiet for one replica", memRepo{"apps/web.yaml": rep(rep(goodService, "        lifecycle: {preStop: {sleep: {seconds: 5}}}\n", "", 1), "replicas: 3", "replicas: 1", 1)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			t.Parallel()
			checkFindings(t, ReviewAPI, tc.files, tc.want)
		})
	}
}

// readRepo loads a testdata repository into memory.
func readRepo(t *testing.T, root string) memRepo {
	t.Helper()
	repo := memRepo{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		repo[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// The planted API repository renders to its golden report.
func TestReviewAPIGolden(t *testing.T) {
	t.Parallel()
	rep, err := ReviewAPI(context.Background(), readRepo(t, filepath.Join("testdata", "apirepo")), "")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "apireview.golden"), rep.Render())
}

func checkGolden(t *testing.T, golden, out string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("render differs from %s (go test -update to accept):\n%s", golden, out)
	}
}

func FuzzReviewAPI(f *testing.F) {
	f.Add(goodAPI, goodService)
	f.Add("swagger: '2.0'\npaths: {/a: {post: {parameters: [{$ref: '#/parameters/p'}]}}}\nparameters: {p: {$ref: '#/parameters/p'}}\n", "kind: Service\nspec: {selector: {a: b}}\n")
	f.Add(`{"openapi": "3.0.0", "paths": {"/x": {"put": {"requestBody": {"$ref": "#/components/requestBodies/B"}}}}, "components": {"requestBodies": {"B": {"$ref": "#/components/requestBodies/B"}}}}`, "")
	f.Fuzz(func(t *testing.T, doc, manifest string) {
		repo := memRepo{"api/doc.yaml": doc, "apps/x.yaml": manifest}
		rep, err := ReviewAPI(context.Background(), repo, "")
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]int{"api/doc.yaml": strings.Count(doc, "\n") + 1, "apps/x.yaml": strings.Count(manifest, "\n") + 1}
		for _, fd := range rep.Findings {
			if fd.Line < 1 || fd.Line > lines[fd.File] || fd.Fix == "" || fd.Severity == "" {
				t.Fatalf("finding out of its file or without fix/severity: %+v", fd)
			}
		}
	})
}
