package reconciler

import (
	"fmt"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// fakePullConfig is a ConfigStore holding Secrets only.
type fakePullConfig map[string]*manifests.Secret // by "ns/name"

func (f fakePullConfig) LookupConfigMap(ns, name string) (*manifests.ConfigMap, error) {
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, store.ErrNotFound)
}

func (f fakePullConfig) LookupSecret(ns, name string) (*manifests.Secret, error) {
	if s, ok := f[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, store.ErrNotFound)
}

func (f fakePullConfig) LookupClaim(ns, name string) (*manifests.PersistentVolumeClaim, bool, error) {
	return nil, false, fmt.Errorf("claim %s/%s: %w", ns, name, store.ErrNotFound)
}

const testPassword = "s3cr3t-pa55"

func regSecret(typ, key, value string) *manifests.Secret {
	return &manifests.Secret{Type: typ, Data: map[string][]byte{key: []byte(value)}}
}

// TestControllerPassesPullSecrets: the credentials of a template's
// imagePullSecrets, read from the ConfigStore in the deployment's
// namespace, reach the pull of each of its images.
func TestControllerPassesPullSecrets(t *testing.T) {
	auths := `{"auths":{"reg.example.com":{"username":"u","password":"` + testPassword + `"}}}`
	h := newHarness(t, Options{Config: fakePullConfig{
		"default/reg": regSecret(manifests.SecretTypeDockerConfigJSON, manifests.DockerConfigJSONKey, auths),
	}})
	const img = "reg.example.com/team/app:1"
	h.engine.AddRemoteImage(img)
	d := testDeployment("web", 1, "v1")
	d.Spec.Template.Spec.Containers[0].Image = img
	d.Spec.Template.Spec.ImagePullSecrets = []manifests.LocalObjectReference{{Name: "reg"}, {Name: "gone"}}
	h.apply(d)
	h.start()
	h.waitReplicas("web", 1)
	got := fmt.Sprint(h.engine.PullSecrets(img))
	if want := "[secret default/reg credentials for reg.example.com]"; got != want {
		t.Errorf("pull secrets of %s = %s, want %s", img, got, want)
	}
}
