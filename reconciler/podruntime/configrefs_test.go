package podruntime

import (
	"slices"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// refsTemplate is a pod template whose environment refers to ConfigMaps
// app and nope (optional) and Secret db, and whose volumes and pull
// secrets refer to more.
func refsTemplate() *manifests.PodTemplateSpec {
	optional := true
	t := &manifests.PodTemplateSpec{}
	t.Spec.Containers = []manifests.Container{{Name: "web", Image: "x",
		Env: []manifests.EnvVar{
			{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}},
			{Name: "PW", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "password"}}},
			{Name: "OPT", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "nope", Key: "k", Optional: &optional}}},
			{Name: "POD", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		EnvFrom: []manifests.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "app"}}},
	}}
	t.Spec.Volumes = []manifests.Volume{
		{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "files"}},
		{Name: "b", Secret: &manifests.SecretVolumeSource{SecretName: "tls"}},
		{Name: "c", Projected: &manifests.ProjectedVolumeSource{Sources: []manifests.VolumeProjection{
			{ConfigMap: &manifests.ConfigMapProjection{Name: "app"}}, {Secret: &manifests.SecretProjection{Name: "proj"}}}}},
	}
	t.Spec.ImagePullSecrets = []manifests.LocalObjectReference{{Name: "regcred"}}
	return t
}

func TestConfigWatchKeysAndIndex(t *testing.T) {
	got := ConfigWatchKeys("prod", refsTemplate(), nil)
	want := []string{"configmap:prod/app", "configmap:prod/files", "configmap:prod/nope", "secret:prod/db", "secret:prod/proj", "secret:prod/regcred", "secret:prod/tls"}
	if !slices.Equal(got, want) {
		t.Errorf("ConfigWatchKeys = %q, want %q", got, want)
	}
	var r ConfigRefs
	r.Set("prod/web", got)
	r.Set("prod/api", []string{"configmap:prod/app"})
	if g := r.Referrers("configmap:prod/app"); !slices.Equal(g, []string{"prod/api", "prod/web"}) {
		t.Errorf("referrers = %q", g)
	}
	r.Set("prod/web", []string{"secret:prod/db"}) // the template changed
	if g := r.Referrers("configmap:prod/app"); !slices.Equal(g, []string{"prod/api"}) {
		t.Errorf("referrers after a change = %q", g)
	}
	r.Set("prod/api", nil) // deleted
	if g := r.Referrers("configmap:prod/app"); len(g) != 0 {
		t.Errorf("referrers after deletion = %q", g)
	}
}

func TestEnvMissingRefsNamesNonOptionalReferencesOnly(t *testing.T) {
	ps := &refsTemplate().Spec
	got := EnvMissingRefs("prod", ps, &fakeConfig{})
	if !strings.HasPrefix(got, "waiting for ") || !strings.Contains(got, "ConfigMap prod/app") || !strings.Contains(got, "Secret prod/db") {
		t.Errorf("EnvMissingRefs = %q, want the ConfigMap app and the Secret db named", got)
	}
	if strings.Contains(got, "nope") {
		t.Errorf("EnvMissingRefs = %q names an optional reference", got)
	}
}
