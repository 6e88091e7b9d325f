package podruntime

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

const testPassword = "s3cr3t-pa55"

func regSecret(typ, key, value string) *manifests.Secret {
	return &manifests.Secret{Type: typ, Data: map[string][]byte{key: []byte(value)}}
}

func TestPullSecrets(t *testing.T) {
	auths := `{"auths":{"reg.example.com:5000":{"username":"u","password":"` + testPassword + `"}}}`
	cfg := &fakeConfig{secrets: map[string]*manifests.Secret{
		"ns/reg":     regSecret(manifests.SecretTypeDockerConfigJSON, manifests.DockerConfigJSONKey, auths),
		"ns/legacy":  regSecret(manifests.SecretTypeDockercfg, ".dockercfg", `{"old.example.com":{"auth":"dTpw"}}`),
		"ns/opaque":  regSecret(manifests.SecretTypeOpaque, manifests.DockerConfigJSONKey, auths),
		"ns/garbled": regSecret(manifests.SecretTypeDockerConfigJSON, manifests.DockerConfigJSONKey, `{"auths":`+testPassword),
		"other/reg":  regSecret(manifests.SecretTypeDockerConfigJSON, manifests.DockerConfigJSONKey, auths),
	}}
	refs := func(names ...string) []manifests.LocalObjectReference {
		var out []manifests.LocalObjectReference
		for _, n := range names {
			out = append(out, manifests.LocalObjectReference{Name: n})
		}
		return out
	}
	tests := []struct {
		name        string
		cfg         ConfigStore
		refs        []manifests.LocalObjectReference
		wantCreds   []string // as printed: source and registry
		wantSkipped []string
	}{
		{name: "none", cfg: cfg},
		{name: "dockerconfigjson", cfg: cfg, refs: refs("reg"),
			wantCreds: []string{"secret ns/reg credentials for reg.example.com:5000"}},
		{name: "order kept, legacy dockercfg read", cfg: cfg, refs: refs("legacy", "reg"),
			wantCreds: []string{"secret ns/legacy credentials for old.example.com", "secret ns/reg credentials for reg.example.com:5000"}},
		{name: "missing is skipped, the rest used", cfg: cfg, refs: refs("absent", "reg"),
			wantCreds:   []string{"secret ns/reg credentials for reg.example.com:5000"},
			wantSkipped: []string{"secret ns/absent: not found"}},
		{name: "only the pod's namespace", cfg: cfg, refs: refs("nowhere"),
			wantSkipped: []string{"secret ns/nowhere: not found"}},
		{name: "wrong type ignored", cfg: cfg, refs: refs("opaque"),
			wantSkipped: []string{`secret ns/opaque: of type "Opaque", not kubernetes.io/dockerconfigjson`}},
		{name: "invalid content, never echoed", cfg: cfg, refs: refs("garbled"),
			wantSkipped: []string{"secret ns/garbled: not a valid docker config JSON"}},
		{name: "empty name", cfg: cfg, refs: refs(""),
			wantSkipped: []string{"an imagePullSecrets entry has no name"}},
		{name: "no config store", cfg: nil, refs: refs("reg"),
			wantSkipped: []string{"secret ns/reg: not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			creds, skipped := PullSecrets(tt.cfg, "ns", tt.refs)
			var got []string
			for _, c := range creds {
				got = append(got, fmt.Sprint(c))
			}
			if !reflect.DeepEqual(got, tt.wantCreds) {
				t.Errorf("creds = %q, want %q", got, tt.wantCreds)
			}
			if !reflect.DeepEqual(skipped, tt.wantSkipped) {
				t.Errorf("skipped = %q, want %q", skipped, tt.wantSkipped)
			}
			for _, s := range append(got, skipped...) {
				if strings.Contains(s, testPassword) {
					t.Errorf("%q shows the password", s)
				}
			}
		})
	}
}
