package redact

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		kinds          Counts
	}{
		{"nothing", "pod web-1 restarted 3 times at 12:34:56; limits: memory=64Mi", "pod web-1 restarted 3 times at 12:34:56; limits: memory=64Mi", nil},
		{"password pair", "connecting with password=hunter2 to db", "connecting with password=[REDACTED:secret-pair] to db", Counts{KindPair: 1}},
		{"json token", `{"user":"bob","token": "abc.def", "n": 1}`, `{"user":"bob","token": "[REDACTED:secret-pair]", "n": 1}`, Counts{KindPair: 1}},
		{"escaped quote", `{"password":"pa\"ss"}`, `{"password":"[REDACTED:secret-pair]"}`, Counts{KindPair: 1}},
		{"env line", "DB_PASSWORD=s3cr3t LOG_LEVEL=debug", "DB_PASSWORD=[REDACTED:secret-pair] LOG_LEVEL=debug", Counts{KindPair: 1}},
		{"not secret names", "max_tokens=500 finding_key=ns-deploy-web TOKEN_URL=x PASSWORD_FILE=/etc/p key: app.conf secretName: db",
			"max_tokens=500 finding_key=ns-deploy-web TOKEN_URL=x PASSWORD_FILE=/etc/p key: app.conf secretName: db", nil},
		{"bearer", "GET /api Authorization: Bearer abcDEF123456xyz", "GET /api Authorization: Bearer [REDACTED:bearer]", Counts{KindBearer: 1}},
		{"bearer lower", "sent bearer abcDEF123456xyz.q", "sent bearer [REDACTED:bearer]", Counts{KindBearer: 1}},
		{"bearer prose", "needs a bearer token in the header", "needs a bearer token in the header", nil},
		{"basic", "authorization: Basic dXNlcjpwYXNz", "authorization: Basic [REDACTED:authorization]", Counts{KindAuthorization: 1}},
		{"jwt", "id_token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nat-ure end", "id_token [REDACTED:jwt] end", Counts{KindJWT: 1}},
		{"aws", "key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED:aws-key] used", Counts{KindAWSKey: 1}},
		{"aws secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED:secret-pair]", Counts{KindPair: 1}},
		{"gcp", "key=AIzaSyA1234567890abcdefghijklmnopqrstuv ok", "key=[REDACTED:gcp-key] ok", Counts{KindGCPKey: 1}},
		{"github", "token ghp_0123456789abcdefghijABCDEFGHIJ012345", "token [REDACTED:token]", Counts{KindToken: 1}},
		{"sk name is not a key", "disk-pressure-threshold-exceeded", "disk-pressure-threshold-exceeded", nil},
		{"azure", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc+/def==;EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:secret-pair];EndpointSuffix=core.windows.net", Counts{KindPair: 1}},
		{"userinfo", "dsn postgres://app:pw@db:5432/app?sslmode=disable", "dsn postgres://[REDACTED:url-userinfo]@db:5432/app?sslmode=disable", Counts{KindURLUserinfo: 1}},
		{"query", "GET https://api.example.com/v1?api-key=k123&x=1&sig=abc#frag", "GET https://api.example.com/v1?api-key=[REDACTED:url-query]&x=1&sig=[REDACTED:url-query]#frag", Counts{KindURLQuery: 2}},
		{"slack", "posting to https://hooks.slack.com/services/T0/B0/XYZ failed", "posting to https://hooks.slack.com/services/[REDACTED:webhook] failed", Counts{KindWebhook: 1}},
		{"private key", "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb", "a\n[REDACTED:private-key]\nb", Counts{KindPrivateKey: 1}},
		{"private key cut", "x -----BEGIN PRIVATE KEY-----\nMIIE…", "x [REDACTED:private-key]", Counts{KindPrivateKey: 1}},
		{"env yaml", "    env:\n    - name: DB_PASSWORD\n      value: hunter2\n    - name: MODE\n      value: prod\n",
			"    env:\n    - name: DB_PASSWORD\n      value: [REDACTED:secret-env]\n    - name: MODE\n      value: prod\n", Counts{KindEnv: 1}},
		{"env json", `[{"name":"API_TOKEN","value":"t0k"},{"name":"MODE","value":"prod"}]`, `[{"name":"API_TOKEN","value":"[REDACTED:secret-env]"},{"name":"MODE","value":"prod"}]`, Counts{KindEnv: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := String(tc.in)
			if got != tc.want {
				t.Fatalf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if n.String() != tc.kinds.String() {
				t.Errorf("counts %v, want %v", n, tc.kinds)
			}
			again, n2 := String(got)
			if again != got || n2.Total() != 0 {
				t.Errorf("not idempotent: %q (%v)", again, n2)
			}
		})
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"DB_PASSWORD": true, "password": true, "githubToken": true, "GITHUB_TOKEN": true, "client-secret": true,
		"x-api-key": true, "apiKey": true, "AWS_SECRET_ACCESS_KEY": true, "SECRET_KEY_BASE": true, "db_pwd": true,
		"ENCRYPTION_KEY": true, "AccountKey": true, "SharedAccessSignature": true, "connectionString": true,
		"PASSWORD_FILE": false, "TOKEN_URL": false, "secretName": false, "max_tokens": false, "finding_key": false,
		"key": false, "PWD": false, "AWS_ACCESS_KEY_ID": false, "public_key": false, "": false, "sort-key": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pass@llm.example.com/v1?api-key=abc": "https://[REDACTED:url-userinfo]@llm.example.com/v1?api-key=[REDACTED:url-query]",
		"http://127.0.0.1:11434/v1":                        "http://127.0.0.1:11434/v1",
		"":                                                 "",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigMapData(t *testing.T) {
	d := map[string]string{"app.conf": "password=x", "LOG_LEVEL": "debug"}
	n := ConfigMapData(d, Marker(KindConfigMapValue), func(k string) bool { return k == "LOG_LEVEL" })
	if n != 1 || d["app.conf"] != "[REDACTED:configmap-value]" || d["LOG_LEVEL"] != "debug" {
		t.Fatalf("got %d %v", n, d)
	}
}

func TestNothingToRedactIsNotCopied(t *testing.T) {
	in := strings.Repeat("level=info msg=\"request done\" status=200 path=/healthz\n", 100)
	out, n := String(in)
	if out != in || n != nil {
		t.Fatalf("changed clean text: %v", n)
	}
}

func TestJSON(t *testing.T) {
	in := []byte(`{"LLM_BASE_URL":{"value":"https://u:p@llm/v1?api-key=k","source":"env"},"GITHUB_TOKEN":"ghtok","n":1,"list":["password=x"]}`)
	out, n := JSON(in)
	want := `{"GITHUB_TOKEN":"[REDACTED:secret-pair]","LLM_BASE_URL":{"source":"env","value":"https://[REDACTED:url-userinfo]@llm/v1?api-key=[REDACTED:url-query]"},"list":["password=[REDACTED:secret-pair]"],"n":1}`
	if string(out) != want || n.Total() != 4 {
		t.Fatalf("JSON =\n%s (%v)\nwant\n%s", out, n, want)
	}
	clean := []byte(`{"a": 1}`)
	if out, n := JSON(clean); string(out) != string(clean) || n != nil {
		t.Fatalf("clean JSON changed: %s", out)
	}
}

func TestCountMarkers(t *testing.T) {
	n := CountMarkers("a: '[REDACTED:configmap-value]' b: [REDACTED:configmap-value] c: [REDACTED:nonsense] [REDACTED:jwt")
	if n.String() != "configmap-value=2" {
		t.Fatalf("got %v", n)
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	lines := []string{
		`{"level":"info","msg":"ready","port":8080}` + "\n",
		`{"level":"warn","msg":"peer down","url":"http://u:Pl4nted@peer:8000","error":"dial: token=Pl4ntedTok"}` + "\n",
	}
	for _, l := range lines {
		if n, err := w.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(got) != 2 || got[0] != strings.TrimSpace(lines[0]) || strings.Contains(got[1], "Pl4nted") || !json.Valid([]byte(got[1])) {
		t.Fatalf("log:\n%s", b.String())
	}
}

func TestKnown(t *testing.T) {
	Known("https://hooks.example.com/hooks/T0KEN-abcdef-123456", "tok-3456789", "short", "postgres://u:dbpass-123@db/kubecrew_production")
	for _, tc := range []struct{ in, want string }{
		{`Post "https://hooks.example.com/hooks/T0KEN-abcdef-123456": refused`, `Post "[REDACTED:setting]": refused`},
		{`Post "http://other/hooks/T0KEN-abcdef-123456?x=1": refused`, `Post "http://other[REDACTED:setting]?x=1": refused`},
		{"token tok-3456789 and short", "token [REDACTED:setting] and short"},
		{"password dbpass-123 for db kubecrew_production", "password [REDACTED:setting] for db kubecrew_production"},
	} {
		if got, _ := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestError(t *testing.T) {
	if got := Error(nil); got != "" {
		t.Errorf("Error(nil) = %q", got)
	}
	err := &url.Error{Op: "Post", URL: "http://u:p4ss@h/v1?api-key=k3y", Err: errors.New("refused")}
	if got := Error(err); strings.Contains(got, "p4ss") || strings.Contains(got, "k3y") {
		t.Errorf("Error(%v) = %q: the credential is shown", err, got)
	}
}
