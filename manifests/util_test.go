package manifests

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParseMaxSurgeUnavailable(t *testing.T) {
	is := func(s string) *intstr.IntOrString { x := intstr.Parse(s); return &x }
	tests := []struct {
		name              string
		replicas          *int32
		strategy          DeploymentStrategy
		surge, unavailble int32
		wantErr           string
	}{
		{"defaults on 10 replicas: surge rounds up, unavailable down", ptr[int32](10), DeploymentStrategy{}, 3, 2, ""},
		{"defaults on 1 replica", ptr[int32](1), DeploymentStrategy{}, 1, 0, ""},
		{"unset replicas mean 1", nil, DeploymentStrategy{}, 1, 0, ""},
		{"integers are taken as they are", ptr[int32](5),
			DeploymentStrategy{Type: StrategyRollingUpdate, RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("2"), MaxUnavailable: is("1")}}, 2, 1, ""},
		{"percentages", ptr[int32](7),
			DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("50%"), MaxUnavailable: is("50%")}}, 4, 3, ""},
		{"both zero makes unavailable 1", ptr[int32](3),
			DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("0"), MaxUnavailable: is("10%")}}, 0, 1, ""},
		{"zero replicas", ptr[int32](0), DeploymentStrategy{}, 0, 1, ""},
		{"one bound set, the other defaulted", ptr[int32](4),
			DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("0")}}, 0, 1, ""},
		{"an absurd integer surge is bounded, so replicas + maxSurge cannot overflow", ptr[int32](MaxReplicasLimit),
			DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("2147483647"), MaxUnavailable: is("2147483647")}}, MaxReplicasLimit, MaxReplicasLimit, ""},
		{"an absurd percentage is bounded too", ptr[int32](MaxReplicasLimit),
			DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("1000000%"), MaxUnavailable: is("0")}}, MaxReplicasLimit, 0, ""},
		{"Recreate removes everything first", ptr[int32](4), DeploymentStrategy{Type: StrategyRecreate}, 0, 4, ""},
		{"invalid percentage", ptr[int32](4),
			DeploymentStrategy{RollingUpdate: &RollingUpdateDeployment{MaxSurge: is("lots")}}, 0, 0, `deployment "d": maxSurge: invalid value for IntOrString: invalid type: string is not a percentage`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Deployment{Metadata: ObjectMeta{Name: "d"}, Spec: DeploymentSpec{Replicas: tt.replicas, Strategy: tt.strategy}}
			s, u, err := ParseMaxSurgeUnavailable(d)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s != tt.surge || u != tt.unavailble {
				t.Errorf("got surge %d unavailable %d, want %d %d", s, u, tt.surge, tt.unavailble)
			}
		})
	}
}

func decodeFull(t *testing.T) *Deployment {
	t.Helper()
	docs, err := Decode("full.yaml", []byte(fullManifest))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0].Deployment
}

func TestDeepCopy(t *testing.T) {
	d := decodeFull(t)
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	d.Metadata.CreationTimestamp = &ts
	d.Status = &DeploymentStatus{Replicas: 1, Conditions: []DeploymentCondition{{Type: ConditionAvailable, Status: "True", LastUpdateTime: ts}}}
	before, err := Marshal(d, "json")
	if err != nil {
		t.Fatal(err)
	}
	c := d.DeepCopy()
	after, err := Marshal(c, "json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("copy differs:\n%s\n%s", before, after)
	}
	if c.TemplateHash() != d.TemplateHash() {
		t.Errorf("copy hashes differently")
	}
	// Mutate everything reachable through a reference in the copy.
	c.Metadata.Labels["app"] = "changed"
	c.Spec.Selector.MatchLabels["app"] = "changed"
	*c.Spec.Replicas = 9
	cc := c.Container()
	cc.Env[0].Value = "changed"
	cc.Args[0] = "changed"
	cc.Resources.Limits["cpu"] = resource.MustParse("2")
	*cc.SecurityContext.RunAsUser = 5
	c.Spec.Template.Spec.Volumes[0].HostPath.Path = "/changed"
	c.Status.Conditions[0].Status = "False"
	*c.Metadata.CreationTimestamp = ts.Add(time.Hour)
	again, err := Marshal(d, "json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, again) {
		t.Errorf("changing the copy changed the original:\n%s", again)
	}
	if (*Deployment)(nil).DeepCopy() != nil {
		t.Errorf("DeepCopy of nil is not nil")
	}
}

// TestMarshal pins the printed form (what `get -o yaml|json` shows) and
// checks that it can be applied again unchanged.
func TestMarshal(t *testing.T) {
	d := decodeFull(t)
	ts := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	d.Metadata.Generation = 3
	d.Metadata.CreationTimestamp = &ts
	d.Status = &DeploymentStatus{ObservedGeneration: 3, Replicas: 1, UpdatedReplicas: 1,
		Conditions: []DeploymentCondition{{Type: ConditionProgressing, Status: "True", Reason: "NewReplicaSetAvailable", LastTransitionTime: ts}}}
	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			out, err := Marshal(d, format)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "marshal/full."+format, out)
			docs, err := Decode("out."+format, out)
			if err != nil {
				t.Fatalf("printed output does not decode: %v", err)
			}
			back := docs[0].Deployment
			if back.TemplateHash() != d.TemplateHash() {
				t.Errorf("round trip changed the template hash")
			}
			back.Metadata.Generation, back.Metadata.CreationTimestamp, back.Status = d.Metadata.Generation, d.Metadata.CreationTimestamp, d.Status
			again, err := Marshal(back, format)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, again) {
				t.Errorf("round trip changed the deployment:\n%s", again)
			}
		})
	}
	if _, err := Marshal(d, "toml"); err == nil || !strings.Contains(err.Error(), `unsupported output format "toml"`) {
		t.Errorf("Marshal(toml) err = %v", err)
	}
}
