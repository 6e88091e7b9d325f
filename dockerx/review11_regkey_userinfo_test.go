package dockerx

import (
	"fmt"
	"strings"
	"testing"
)

// Review 11 (credentials): a docker config key may be a URL, and a URL may
// carry userinfo. The key is printed as-is by String/LogValue (and so in
// "pulling image ... credentials=..." and every pull error), while the
// kubelet-style matcher still uses the entry.
func TestReview11RegistryKeyUserinfoPrinted(t *testing.T) {
	const pw = "pa55w0rd-in-key"
	data := `{"auths":{"https://robot:` + pw + `@reg.example.com":{"username":"robot","password":"` + pw + `"}}}`
	creds, err := ParseDockerConfigJSON([]byte(data), "secret ns/reg")
	if err != nil {
		t.Fatal(err)
	}
	m := MatchCredentials("reg.example.com/team/app:1", creds)
	if len(m) != 1 {
		t.Fatalf("matched %d credentials", len(m))
	}
	if s := fmt.Sprint(m[0]); strings.Contains(s, pw) {
		t.Errorf("the credential as logged shows the password: %s", s)
	}
}

func TestWithoutUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"reg.example.com":                     "reg.example.com",
		"https://robot:tok@reg.example.com":   "https://reg.example.com",
		"robot:tok@reg.example.com:5000/v2/":  "reg.example.com:5000/v2/",
		"https://reg.example.com/team@2024/x": "https://reg.example.com/team@2024/x",
		"https://a@b:c@reg.example.com/p":     "https://reg.example.com/p",
		"http://u:p@127.0.0.1:5000":           "http://127.0.0.1:5000",
	} {
		if got := withoutUserinfo(in); got != want {
			t.Errorf("withoutUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
