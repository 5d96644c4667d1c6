package redact

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

// planted are secrets of every kind String redacts, each on a line of its
// own as a log, a manifest or a header would hold it, with the exact value
// that must never survive.
var planted = []struct{ line, secret string }{
	{"password=Pl4nted-Pass-Value-0001", "Pl4nted-Pass-Value-0001"},
	{`"client_secret": "Pl4ntedClientSecret0002"`, "Pl4ntedClientSecret0002"},
	{"Authorization: Bearer Pl4ntedBearerToken0003", "Pl4ntedBearerToken0003"},
	{"authorization: Basic UGw0bnRlZEJhc2ljMDAwNA==", "UGw0bnRlZEJhc2ljMDAwNA=="},
	{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQbDRudGVkIn0.Pl4ntedJwtSig0005", "eyJzdWIiOiJQbDRudGVkIn0"},
	{"AKIAPL4NTED000000006", "AKIAPL4NTED000000006"},
	{"AIzaPl4ntedGcpKey0000000000000000000007", "AIzaPl4ntedGcpKey0000000000000000000007"},
	{"ghp_Pl4ntedGithubToken00000000000000000008", "ghp_Pl4ntedGithubToken00000000000000000008"},
	{"https://user:Pl4ntedUrlPass0009@db.example.com/x", "Pl4ntedUrlPass0009"},
	{"https://api.example.com/v1?x=1&api-key=Pl4ntedQueryKey0010", "Pl4ntedQueryKey0010"},
	{"-----BEGIN EC PRIVATE KEY-----\nPl4ntedKeyMaterial0011\n-----END EC PRIVATE KEY-----", "Pl4ntedKeyMaterial0011"},
	{"  - name: DB_PASSWORD\n    value: Pl4ntedEnvValue0012", "Pl4ntedEnvValue0012"},
	{"AccountName=a;AccountKey=Pl4ntedAzureKey0013==;EndpointSuffix=core.windows.net", "Pl4ntedAzureKey0013"},
	{"https://hooks.slack.com/services/T000/B000/Pl4ntedSlackHook0014", "Pl4ntedSlackHook0014"},
}

// FuzzString: String never panics, is idempotent, returns text it did not
// change untouched, grows text by at most one marker per redacted value,
// and never lets a planted secret through whatever surrounds it.
func FuzzString(f *testing.F) {
	f.Add("", "", uint8(0))
	f.Add("level=info msg=start\n", "\nlevel=error token: abc", uint8(3))
	f.Add("https://a:b@", "?sig=", uint8(8))
	f.Add("-----BEGIN PRIVATE KEY-----", "", uint8(10))
	f.Add(`{"name":"X_TOKEN","value":"`, `"}`, uint8(11))
	f.Add("Authorization: ", "Bearer ", uint8(2))
	f.Fuzz(func(t *testing.T, before, after string, which uint8) {
		p := planted[int(which)%len(planted)]
		for _, in := range []string{before + after, before + "\n" + p.line + "\n" + after} {
			out, n := String(in)
			if n.Total() == 0 && out != in {
				t.Fatalf("changed text without counting: %q → %q", in, out)
			}
			if len(out) > len(in)+n.Total()*MaxMarkerLen {
				t.Fatalf("output %d bytes for %d input and %d redactions", len(out), len(in), n.Total())
			}
			again, n2 := String(out)
			if again != out || n2.Total() != 0 {
				t.Fatalf("not idempotent:\n in %q\nout %q\nagain %q (%v)", in, out, again, n2)
			}
		}
		in := before + "\n" + p.line + "\n" + after
		if out, _ := String(in); strings.Contains(out, p.secret) && !strings.Contains(before+after, p.secret) {
			t.Fatalf("planted secret %q leaked:\n in %q\nout %q", p.secret, in, out)
		}
	})
}

// FuzzURL: URL never panics and never keeps a planted userinfo password.
func FuzzURL(f *testing.F) {
	f.Add("https", "host:443/p?q=1")
	f.Add("postgres", "db/app#x")
	f.Fuzz(func(t *testing.T, scheme, rest string) {
		if scheme == "" || strings.ContainsAny(scheme, ":/ \t\n\"'<>`\\{}|^@?#") {
			return
		}
		secret := "Pl4ntedUserinfo"
		u := scheme + "://u:" + secret + "@" + rest
		if out := URL(u); strings.Contains(out, secret) && !strings.Contains(rest, secret) {
			t.Fatalf("URL(%q) = %q", u, out)
		}
	})
}

// FuzzJSON: JSON never panics, keeps valid JSON valid, and never lets a
// value under a secret-looking key through.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"LLM_BASE_URL":{"value":"https://u:p@h/?token=t"},"password":"x","n":[1,"bearer abcdefgh1"]}`), "Pl4ntedJsonSecret")
	f.Add([]byte(`[]`), "x")
	f.Fuzz(func(t *testing.T, doc []byte, secret string) {
		out, _ := JSON(doc)
		if json.Valid(doc) && !json.Valid(out) {
			t.Fatalf("valid JSON %q became invalid: %q", doc, out)
		}
		// A secret worth the name: six letters or digits at least (a
		// one-character "secret" is in any JSON document).
		if len(secret) < 6 || strings.IndexFunc(secret, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
			return
		}
		planted, _ := json.Marshal(map[string]any{"api_token": secret, "doc": json.RawMessage(`{}`)})
		if out, _ := JSON(planted); strings.Contains(string(out), secret) && !strings.Contains(`{"api_token":"[REDACTED:secret-pair]","doc":{}}`, secret) {
			t.Fatalf("planted %q leaked: %s", secret, out)
		}
	})
}
