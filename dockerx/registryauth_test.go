package dockerx

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/registry"

	"github.com/dockctl/dockctl/manifests"
)

const secretPassword = "pa55-w0rd-never-shown"

// creds builds credentials from "key=user:password" pairs.
func testCreds(t *testing.T, source string, pairs ...string) []RegistryCredential {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"auths":{`)
	for i, p := range pairs {
		key, up, _ := strings.Cut(p, "=")
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:{%q:%q}", key, "auth", base64.StdEncoding.EncodeToString([]byte(up)))
	}
	b.WriteString("}}")
	cs, err := ParseDockerConfigJSON([]byte(b.String()), source)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestMatchCredentials(t *testing.T) {
	tests := []struct {
		image string
		keys  []string
		want  []string // keys of the matches, in order
	}{
		{"127.0.0.1:5000/app:1", []string{"127.0.0.1:5000", "127.0.0.1"}, []string{"127.0.0.1:5000"}},
		{"127.0.0.1/app:1", []string{"127.0.0.1:5000"}, nil},
		{"reg.example.com/team/app:1", []string{"reg.example.com", "reg.example.com/team", "reg.example.com/other"},
			[]string{"reg.example.com/team", "reg.example.com"}},
		{"a.example.com/x", []string{"*.example.com"}, []string{"*.example.com"}},
		{"a.b.example.com/x", []string{"*.example.com"}, nil},
		{"example.com/x", []string{"*.example.com"}, nil},
		{"reg.example.com/x", []string{"http://reg.example.com/v2/", "https://reg.example.com/v1/"},
			[]string{"http://reg.example.com/v2/", "https://reg.example.com/v1/"}},
		{"nginx", []string{"https://index.docker.io/v1/"}, []string{"https://index.docker.io/v1/"}},
		{"someone/app:2", []string{"index.docker.io"}, []string{"index.docker.io"}},
		{"docker.io/someone/app", []string{"https://index.docker.io/v1/", "quay.io"}, []string{"https://index.docker.io/v1/"}},
		{"quay.io/someone/app", []string{"https://index.docker.io/v1/"}, nil},
		{"localhost:5000/app", []string{"localhost:5000"}, []string{"localhost:5000"}},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			var pairs []string
			for _, k := range tt.keys {
				pairs = append(pairs, k+"=u:p")
			}
			var got []string
			for _, c := range MatchCredentials(tt.image, testCreds(t, "secret ns/s", pairs...)) {
				got = append(got, c.Registry)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("MatchCredentials(%s, %q) = %q, want %q", tt.image, tt.keys, got, tt.want)
			}
		})
	}
}

// TestRegistryCredentialNeverShown: printing a credential, logging it,
// or failing to parse a config shows no value.
func TestRegistryCredentialNeverShown(t *testing.T) {
	c := testCreds(t, "secret ns/reg", "reg.example.com=user:"+secretPassword)[0]
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "credentials", c, "all", []RegistryCredential{c})
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "credentials", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v %#v %s %q", c, c, c, c), fmt.Sprint([]RegistryCredential{c}), logged.String()} {
		if strings.Contains(s, secretPassword) || strings.Contains(s, "user") {
			t.Errorf("shown: %s", s)
		}
		if !strings.Contains(s, "secret ns/reg credentials for reg.example.com") {
			t.Errorf("%s does not name the source and registry", s)
		}
	}
	for _, bad := range []string{`{"auths":` + secretPassword, `{"auths":{"r":{"auth":"` + secretPassword + `"}}}`, `["` + secretPassword + `"]`} {
		_, err := ParseDockerConfigJSON([]byte(bad), "secret ns/bad")
		if err == nil || strings.Contains(err.Error(), secretPassword) || !strings.Contains(err.Error(), "secret ns/bad") {
			t.Errorf("ParseDockerConfigJSON(%q) error = %v", bad, err)
		}
	}
}

func writeDockerConfig(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeCredentialHelper puts docker-credential-NAME on PATH: a program
// answering "get" as a credential helper does.
func fakeCredentialHelper(t *testing.T, name, user, secret string) {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread url\n" +
		fmt.Sprintf("printf '{\"ServerURL\":\"%%s\",\"Username\":\"%s\",\"Secret\":\"%s\"}' \"$url\"\n", user, secret)
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-"+name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestDockerCLICredential(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	t.Setenv("DOCKER_AUTH_CONFIG", "")
	fakeCredentialHelper(t, "dockctltest", "helper-user", secretPassword)
	tests := []struct {
		name     string
		config   string // "" no config.json
		image    string
		wantUser string // "" no credential
		wantErr  string
	}{
		{name: "no config file", image: "127.0.0.1:5000/app:1"},
		{name: "auths by host:port", image: "127.0.0.1:5000/app:1",
			config:   `{"auths":{"127.0.0.1:5000":{"auth":"` + b64("alice:"+secretPassword) + `"}}}`,
			wantUser: "alice"},
		{name: "auths key as URL", image: "reg.example.com/app:1",
			config:   `{"auths":{"https://reg.example.com":{"username":"bob","password":"x"}}}`,
			wantUser: "bob"},
		{name: "docker hub under its index address", image: "nginx",
			config:   `{"auths":{"https://index.docker.io/v1/":{"auth":"` + b64("carol:x") + `"}}}`,
			wantUser: "carol"},
		{name: "another registry's", image: "quay.io/app",
			config: `{"auths":{"127.0.0.1:5000":{"auth":"` + b64("alice:x") + `"}}}`},
		{name: "credHelpers run where they can", image: "reg.example.com/app",
			config:   `{"credHelpers":{"reg.example.com":"dockctltest"}}`,
			wantUser: "helper-user"},
		{name: "credsStore not on PATH", image: "reg.example.com/app",
			config:  `{"auths":{"reg.example.com":{}},"credsStore":"dockctl-absent"}`,
			wantErr: "credential helper docker-credential-dockctl-absent for reg.example.com is not on PATH"},
		{name: "garbled config", image: "reg.example.com/app", config: `{"auths":` + secretPassword,
			wantErr: "not readable or not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.config != "" {
				dir = writeDockerConfig(t, tt.config)
			}
			c, ok, err := dockerCLICredential(dir, tt.image)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), secretPassword) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tt.wantUser != "") || c.auth.Username != tt.wantUser {
				t.Fatalf("credential %v (user %q), ok %v; want user %q", c, c.auth.Username, ok, tt.wantUser)
			}
		})
	}
}

// TestEnsureImageCredentials: a pull tries the matching pull secrets in
// order, then the docker CLI's, until one succeeds; anonymous when none
// matches; and a failure names what was tried, never a value.
func TestEnsureImageCredentials(t *testing.T) {
	const img = "127.0.0.1:5000/app:1"
	const ok = `{"status":"Digest: sha256:1"}` + "\n"
	const denied = `{"errorDetail":{"message":"unauthorized: authentication required"},"error":"unauthorized"}` + "\n"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cliConfig := writeDockerConfig(t, `{"auths":{"127.0.0.1:5000":{"auth":"`+b64("cli:right")+`"}}}`)
	tests := []struct {
		name      string
		secrets   []RegistryCredential
		cliDir    string
		wantUsers []string // per pull: the username sent ("" anonymous)
		wantErr   []string
	}{
		{name: "anonymous without credentials", wantUsers: []string{""}, wantErr: []string{"unauthorized"}},
		{name: "secret credential", secrets: testCreds(t, "secret ns/a", "127.0.0.1:5000=sec:right"),
			wantUsers: []string{"sec"}},
		{name: "in order until one succeeds",
			secrets:   append(testCreds(t, "secret ns/a", "127.0.0.1:5000=first:wrong"), testCreds(t, "secret ns/b", "127.0.0.1:5000=second:right", "quay.io=q:right")...),
			wantUsers: []string{"first", "second"}},
		{name: "docker CLI after the secrets", cliDir: cliConfig,
			secrets:   testCreds(t, "secret ns/a", "127.0.0.1:5000=first:wrong", "other.example.com=o:right"),
			wantUsers: []string{"first", "cli"}},
		{name: "docker CLI alone", cliDir: cliConfig, wantUsers: []string{"cli"}},
		{name: "all refused", secrets: testCreds(t, "secret ns/a", "127.0.0.1:5000=first:"+secretPassword, "127.0.0.1=x:right"),
			wantUsers: []string{"first"},
			wantErr:   []string{`pull image "127.0.0.1:5000/app:1": with secret ns/a credentials for 127.0.0.1:5000: unauthorized`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{inspectImg: map[string]bool{}, pullAuth: func(auth string) string {
				if auth == "" {
					return denied
				}
				ac, err := registry.DecodeAuthConfig(auth)
				if err != nil || ac.Password != "right" || ac.ServerAddress != "127.0.0.1:5000" {
					return denied
				}
				return ok
			}}
			c := newFakeClient(f)
			if tt.cliDir != "" {
				c.dockerConfigDir = tt.cliDir
			}
			err := c.EnsureImage(context.Background(), img, manifests.PullAlways, tt.secrets)
			var users []string
			for _, a := range f.pullAuths {
				u := ""
				if a != "" {
					ac, derr := registry.DecodeAuthConfig(a)
					if derr != nil {
						t.Fatal(derr)
					}
					u = ac.Username
				}
				users = append(users, u)
			}
			if !reflect.DeepEqual(users, tt.wantUsers) {
				t.Errorf("pulled as %q, want %q", users, tt.wantUsers)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("EnsureImage = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrImagePull) {
				t.Fatalf("EnsureImage = %v, want ErrImagePull", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secretPassword) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// A docker config key may be a URL, and a URL may carry userinfo.
// String/LogValue (and so "pulling image ... credentials=..." and every
// pull error) must not print that userinfo, while the kubelet-style
// matcher still uses the entry.
func TestRegistryKeyUserinfoIsNotPrinted(t *testing.T) {
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
