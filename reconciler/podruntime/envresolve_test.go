package podruntime

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// fakeConfig is an in-memory ConfigStore keyed "namespace/name".
type fakeConfig struct {
	cms     map[string]*manifests.ConfigMap
	secrets map[string]*manifests.Secret
	fail    error // returned by every lookup when set
	lookups int
}

func (f *fakeConfig) LookupConfigMap(ns, name string) (*manifests.ConfigMap, error) {
	f.lookups++
	if f.fail != nil {
		return nil, f.fail
	}
	if cm, ok := f.cms[store.Key(ns, name)]; ok {
		return cm, nil
	}
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, store.ErrNotFound)
}

func (f *fakeConfig) LookupSecret(ns, name string) (*manifests.Secret, error) {
	f.lookups++
	if f.fail != nil {
		return nil, f.fail
	}
	if s, ok := f.secrets[store.Key(ns, name)]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, store.ErrNotFound)
}

func (f *fakeConfig) LookupClaim(ns, name string) (*manifests.PersistentVolumeClaim, bool, error) {
	return nil, false, fmt.Errorf("claim %s/%s: %w", ns, name, store.ErrNotFound)
}

const secretValue = "s3cr3t-value"

func newFakeConfig() *fakeConfig {
	return &fakeConfig{
		cms: map[string]*manifests.ConfigMap{
			"default/app": {Metadata: manifests.ObjectMeta{Name: "app"}, Data: map[string]string{"mode": "fast", "level": "3", "bad=key": "x", "1st": "y"},
				BinaryData: map[string][]byte{"blob": []byte("bin")}},
			"other/app": {Metadata: manifests.ObjectMeta{Name: "app", Namespace: "other"}, Data: map[string]string{"mode": "other-ns"}},
		},
		secrets: map[string]*manifests.Secret{
			"default/db": {Metadata: manifests.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte(secretValue), "user": []byte("admin")}},
		},
	}
}

func ptrBool(b bool) *bool { return &b }

func TestResolveEnv(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	pod := PodIdentity{Name: "web-abc-0", UID: "0123abcd", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
		Annotations: map[string]string{"example.com/owner": "team-a"}, ServiceAccountName: "default",
		NodeName: "host1", HostIP: "10.222.0.1", PodIP: "10.222.0.7", NodeCPUs: 4, NodeMemory: 8 << 30}
	tests := []struct {
		name    string
		ns      string
		c       manifests.Container
		want    string // Vars joined by " | "
		skipped string
		err     string // "" none
	}{
		{name: "literal values, $(VAR) expansion, escapes and redefinition",
			c: manifests.Container{Env: []manifests.EnvVar{
				{Name: "A", Value: "a"}, {Name: "B", Value: "$(A)-$(NOPE)-$$(A)-$$-$(A"}, {Name: "A", Value: "again"}, {Name: "C", Value: "$(A)$(B)"},
			}},
			want: "A=again | B=a-$(NOPE)-$(A)-$-$(A | C=againa-$(NOPE)-$(A)-$-$(A"},
		{name: "configMapKeyRef and secretKeyRef",
			c: manifests.Container{Env: []manifests.EnvVar{
				{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}},
				{Name: "PW", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "password"}}},
				{Name: "URL", Value: "db://$(PW)@$(MODE)"},
			}},
			want: "MODE=fast | PW=" + secretValue + " | URL=db://" + secretValue + "@fast"},
		{name: "the pod's namespace is where references are looked up",
			ns: "other",
			c: manifests.Container{Env: []manifests.EnvVar{
				{Name: "MODE", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}},
				{Name: "NS", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			}},
			want: "MODE=other-ns | NS=other"},
		// "bad=key" is no ConfigMap key: only a ConfigMap that escaped
		// validation has it, and Docker would split the variable at '='.
		{name: "envFrom with prefix, invalid names skipped, binaryData left out, env overrides in place",
			c: manifests.Container{
				EnvFrom: []manifests.EnvFromSource{{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "app"}}, {Prefix: "DB_", SecretRef: &manifests.SecretEnvSource{Name: "db"}}},
				Env:     []manifests.EnvVar{{Name: "mode", Value: "slow"}},
			},
			want:    "1st=y | level=3 | mode=slow | DB_password=" + secretValue + " | DB_user=admin",
			skipped: "Keys [bad=key] from the EnvFrom configMap default/app were skipped since they are considered invalid environment variable names."},
		{name: "optional references that are missing are skipped",
			c: manifests.Container{
				EnvFrom: []manifests.EnvFromSource{{ConfigMapRef: &manifests.ConfigMapEnvSource{Name: "nope", Optional: ptrBool(true)}},
					{SecretRef: &manifests.SecretEnvSource{Name: "nope", Optional: ptrBool(true)}}},
				Env: []manifests.EnvVar{
					{Name: "A", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "nope", Key: "k", Optional: ptrBool(true)}}},
					{Name: "B", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "nokey", Optional: ptrBool(true)}}},
					{Name: "C", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "nokey", Optional: ptrBool(true)}}},
					{Name: "D", Value: "d"},
				},
			},
			want: "D=d"},
		{name: "missing references are all named, never a value",
			c: manifests.Container{Name: "web",
				EnvFrom: []manifests.EnvFromSource{{SecretRef: &manifests.SecretEnvSource{Name: "gone"}}},
				Env: []manifests.EnvVar{
					{Name: "A", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "nope", Key: "k", Optional: ptrBool(false)}}},
					{Name: "B", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "nokey"}}},
					{Name: "C", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "nokey"}}},
					{Name: "PW", ValueFrom: &manifests.EnvVarSource{SecretKeyRef: &manifests.SecretKeySelector{Name: "db", Key: "password"}}},
				},
			},
			want: "PW=" + secretValue,
			err: `waiting for Secret default/gone not found (container "web", envFrom); ConfigMap default/nope not found (container "web", env A); ` +
				`ConfigMap default/app has no key "nokey" (container "web", env B); Secret default/db has no key "nokey" (container "web", env C)`},
		{name: "fieldRefs",
			c: manifests.Container{Env: []manifests.EnvVar{
				{Name: "N", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "NS", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "UID", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
				{Name: "L", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "H", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['pod-template-hash']"}}},
				{Name: "NOLABEL", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['none']"}}},
				{Name: "AN", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.annotations['example.com/owner']"}}},
				{Name: "NODE", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "SA", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
				{Name: "HIP", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.hostIP"}}},
				{Name: "HIPS", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
				{Name: "PIP", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "PIPS", ValueFrom: &manifests.EnvVarSource{FieldRef: &manifests.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
			}},
			want: "N=web-abc-0 | NS=default | UID=0123abcd | L=web | H=abc | NOLABEL= | AN=team-a | NODE=host1 | SA=default | HIP=10.222.0.1 | HIPS=10.222.0.1 | PIP=10.222.0.7 | PIPS=10.222.0.7"},
		{name: "resourceFieldRefs: divisors round up, unset limits are the host's, unset requests the limit or 0",
			c: manifests.Container{Name: "app",
				Resources: manifests.ResourceRequirements{
					Limits: map[string]resource.Quantity{"cpu": resource.MustParse("1500m"), "memory": resource.MustParse("100Mi")},
				},
				Env: []manifests.EnvVar{
					{Name: "LCPU", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{Resource: "limits.cpu"}}},
					{Name: "LCPUM", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{Resource: "limits.cpu", Divisor: q("1m")}}},
					{Name: "LMEM", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{Resource: "limits.memory", Divisor: q("1Mi")}}},
					{Name: "RMEM", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{Resource: "requests.memory"}}},
					{Name: "SIDE_LCPU", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "side", Resource: "limits.cpu"}}},
					{Name: "SIDE_LMEM", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "side", Resource: "limits.memory", Divisor: q("1Gi")}}},
					{Name: "SIDE_RCPU", ValueFrom: &manifests.EnvVarSource{ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "side", Resource: "requests.cpu"}}},
				},
			},
			want: "LCPU=2 | LCPUM=1500 | LMEM=100 | RMEM=104857600 | SIDE_LCPU=4 | SIDE_LMEM=8 | SIDE_RCPU=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := &manifests.PodSpec{Containers: []manifests.Container{tt.c, {Name: "side"}}}
			p := pod
			p.Namespace = tt.ns
			got, err := ResolveEnv(ps, &ps.Containers[0], p, newFakeConfig())
			if g := strings.Join(got.Vars, " | "); g != tt.want {
				t.Errorf("vars:\n got %s\nwant %s", g, tt.want)
			}
			var msgs []string
			for _, sk := range got.Skipped {
				msgs = append(msgs, sk.Message())
			}
			if g := strings.Join(msgs, " | "); g != tt.skipped {
				t.Errorf("skipped = %q, want %q", g, tt.skipped)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("error: %v", err)
			case tt.err != "":
				var me *MissingRefsError
				if !errors.As(err, &me) {
					t.Fatalf("error = %v (%T), want a MissingRefsError", err, err)
				}
				if err.Error() != tt.err {
					t.Errorf("error:\n got %s\nwant %s", err, tt.err)
				}
				if strings.Contains(err.Error(), secretValue) {
					t.Errorf("a Secret's value is in the error: %s", err)
				}
			}
		})
	}
}

func TestResolveEnvStoreFailures(t *testing.T) {
	c := manifests.Container{Name: "web", Env: []manifests.EnvVar{
		{Name: "A", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "mode"}}},
		{Name: "B", ValueFrom: &manifests.EnvVarSource{ConfigMapKeyRef: &manifests.ConfigMapKeySelector{Name: "app", Key: "level"}}},
	}}
	ps := &manifests.PodSpec{Containers: []manifests.Container{c}}
	// A store that cannot be read is no missing reference: the error says
	// so, and is not a MissingRefsError (the revision is not "waiting").
	f := &fakeConfig{fail: errors.New("disk on fire")}
	_, err := ResolveEnv(ps, &ps.Containers[0], PodIdentity{}, f)
	var me *MissingRefsError
	if err == nil || errors.As(err, &me) || !strings.Contains(err.Error(), "ConfigMap default/app: disk on fire") {
		t.Errorf("error = %v", err)
	}
	if f.lookups != 1 {
		t.Errorf("%d lookups for one ConfigMap, want 1 (once per object)", f.lookups)
	}
	// No store: every reference is missing.
	_, err = ResolveEnv(ps, &ps.Containers[0], PodIdentity{}, nil)
	if !errors.As(err, &me) || len(me.Refs) != 2 {
		t.Errorf("without a store: %v", err)
	}
}

// TestResolveEnvWithServiceVars: as the kubelet's makeEnvironmentVariables,
// a Service variable may be referred to as $(NAME) in a value, a variable
// the container defines itself wins over the Service's, and the Service
// variables come after the container's own.
func TestResolveEnvWithServiceVars(t *testing.T) {
	c := manifests.Container{Name: "web", Env: []manifests.EnvVar{
		{Name: "URL", Value: "redis://$(REDIS_SERVICE_HOST):$(REDIS_SERVICE_PORT)"},
		{Name: "REDIS_SERVICE_PORT", Value: "1"},
	}}
	ps := &manifests.PodSpec{Containers: []manifests.Container{c}}
	svc := map[string]string{"REDIS_SERVICE_HOST": "10.222.8.3", "REDIS_SERVICE_PORT": "6379", "REDIS_PORT": "tcp://10.222.8.3:6379"}
	got, err := ResolveEnvWithServices(ps, &ps.Containers[0], PodIdentity{}, newFakeConfig(), svc)
	if err != nil {
		t.Fatal(err)
	}
	want := "URL=redis://10.222.8.3:6379 | REDIS_SERVICE_PORT=1 | REDIS_PORT=tcp://10.222.8.3:6379 | REDIS_SERVICE_HOST=10.222.8.3"
	if g := strings.Join(got.Vars, " | "); g != want {
		t.Errorf("vars:\n got %s\nwant %s", g, want)
	}
}
