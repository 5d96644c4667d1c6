package persona

import (
	"errors"
	"strings"
	"testing"
)

func TestParseEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []EnvVar
		wantErr []string // each must appear in the error
	}{
		{
			name: "comments, blanks, spaces, quotes, trailing comments",
			in: "# header\n\nA=1\n  B = two words  \nC=\"quoted # not a comment\"\nD='single'\n" +
				"E=value # trailing comment\nF=\nG=0x5865F2\r\n",
			want: []EnvVar{
				{"A", "1", "x.env", 3}, {"B", "two words", "x.env", 4},
				{"C", "quoted # not a comment", "x.env", 5}, {"D", "single", "x.env", 6},
				{"E", "value", "x.env", 7}, {"F", "", "x.env", 8}, {"G", "0x5865F2", "x.env", 9},
			},
		},
		{name: "empty file", in: ""},
		{name: "no equals", in: "A=1\nJUSTAKEY\n", wantErr: []string{"x.env:2: expected KEY=VALUE"}},
		{name: "export prefix", in: "export A=1\n", wantErr: []string{"x.env:1: expected KEY=VALUE"}},
		{name: "lower-case key", in: "agent_tools=a\n", wantErr: []string{"x.env:1: expected KEY=VALUE"}},
		{name: "empty key", in: "=v\n", wantErr: []string{"x.env:1: expected KEY=VALUE"}},
		{name: "unterminated quote", in: "A=\"open\n", wantErr: []string{"x.env:1: A: unterminated \" quote"}},
		{name: "text after quote", in: "A='x' y\n", wantErr: []string{"x.env:1: A: unexpected text after the closing quote"}},
		{name: "duplicate", in: "A=1\nB=2\nA=3\n", wantErr: []string{"x.env:3: A is already set on line 1"}},
		{
			name:    "all bad lines reported",
			in:      "bad one\nA=1\nbad two\n",
			wantErr: []string{"x.env:1: expected KEY=VALUE", "x.env:3: expected KEY=VALUE"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEnv("x.env", []byte(tc.in))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %+v, want an error containing %q", got, tc.wantErr)
				}
				var fe *Error
				if !errors.As(err, &fe) || fe.File != "x.env" || fe.Line == 0 {
					t.Errorf("error %v is not a *Error naming the file and line", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	t.Parallel()
	got := strings.Join(SplitList(" a, b,,a , c ,"), "|")
	if got != "a|b|c" {
		t.Fatalf("SplitList = %q, want a|b|c", got)
	}
	if SplitList("") != nil {
		t.Fatal("SplitList(\"\") should be nil")
	}
}
