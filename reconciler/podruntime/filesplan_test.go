package podruntime

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// render prints a payload as one line per file: volume/path mode data.
func renderFiles(p helperapi.FilesPayload) string {
	var b strings.Builder
	for _, v := range p.Volumes {
		if len(v.Files) == 0 {
			fmt.Fprintf(&b, "%s: (empty)\n", v.Name)
		}
		for _, f := range v.Files {
			fmt.Fprintf(&b, "%s/%s %04o %q\n", v.Name, f.Path, f.Mode, f.Data)
		}
		if v.FSGroup != nil {
			fmt.Fprintf(&b, "%s: fsGroup %d\n", v.Name, *v.FSGroup)
		}
	}
	return b.String()
}

func TestPlanFiles(t *testing.T) {
	objs := FileObjects{
		ConfigMaps: map[string]*manifests.ConfigMap{
			"app": {Data: map[string]string{"app.conf": "port=80", "log.conf": "level=info"}, BinaryData: map[string][]byte{"logo.bin": {0, 1, 2}}},
		},
		Secrets: map[string]*manifests.Secret{
			"db": {Data: map[string][]byte{"password": []byte("hunter2"), "user": []byte("admin")}},
		},
	}
	id := DownwardIdentity{Name: "web-abc-0", Namespace: "shop", UID: "0a1b2c3d",
		Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": `say "hi"`}}
	container := manifests.Container{Name: "web", Resources: manifests.ResourceRequirements{
		Limits:   map[string]resource.Quantity{"memory": resource.MustParse("64Mi"), "cpu": resource.MustParse("500m")},
		Requests: map[string]resource.Quantity{"cpu": resource.MustParse("250m")},
	}}
	host := HostResources{MilliCPU: 4000, MemoryBytes: 8 << 30}
	fsGroup := int64(2000)
	tests := []struct {
		name    string
		vols    []manifests.Volume
		fsGroup *int64
		want    string
		missing []string // substrings of the error
	}{
		{"configMap: every key of data and binaryData, default mode 0644",
			[]manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}}}, nil,
			"cfg/app.conf 0644 \"port=80\"\ncfg/log.conf 0644 \"level=info\"\ncfg/logo.bin 0644 \"\\x00\\x01\\x02\"\n", nil},
		{"configMap items: only those, at their paths, item mode over defaultMode",
			[]manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app", DefaultMode: m32(0o440),
				Items: []manifests.KeyToPath{{Key: "app.conf", Path: "conf/app"}, {Key: "log.conf", Path: "log", Mode: m32(0o600)}}}}}, nil,
			"cfg/conf/app 0440 \"port=80\"\ncfg/log 0600 \"level=info\"\n", nil},
		{"secret with defaultMode and fsGroup",
			[]manifests.Volume{{Name: "s", Secret: &manifests.SecretVolumeSource{SecretName: "db", DefaultMode: m32(0o400)}}}, &fsGroup,
			"s/password 0400 \"hunter2\"\ns/user 0400 \"admin\"\ns: fsGroup 2000\n", nil},
		{"optional and missing: an empty volume",
			[]manifests.Volume{{Name: "o", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "nope", Optional: boolp(true)}},
				{Name: "k", Secret: &manifests.SecretVolumeSource{SecretName: "db", Optional: boolp(true), Items: []manifests.KeyToPath{{Key: "nokey", Path: "x"}}}}}, nil,
			"o: (empty)\nk: (empty)\n", nil},
		{"missing objects and keys are named, every one",
			[]manifests.Volume{{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "nope"}},
				{Name: "b", Secret: &manifests.SecretVolumeSource{SecretName: "db", Items: []manifests.KeyToPath{{Key: "nokey", Path: "x"}}}},
				{Name: "c", Secret: &manifests.SecretVolumeSource{SecretName: "gone"}}}, nil,
			"", []string{`volume a: configmap "nope" not found`, `volume b: secret "db" has no key "nokey"`, `volume c: secret "gone" not found`}},
		{"projected: sources merged, defaultMode, downward API",
			[]manifests.Volume{{Name: "p", Projected: &manifests.ProjectedVolumeSource{DefaultMode: m32(0o444), Sources: []manifests.VolumeProjection{
				{ConfigMap: &manifests.ConfigMapProjection{Name: "app", Items: []manifests.KeyToPath{{Key: "app.conf", Path: "app.conf"}}}},
				{Secret: &manifests.SecretProjection{Name: "db", Items: []manifests.KeyToPath{{Key: "password", Path: "db/password", Mode: m32(0o400)}}}},
				{DownwardAPI: &manifests.DownwardAPIProjection{Items: []manifests.DownwardAPIVolumeFile{{Path: "name", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			}}}}, nil,
			"p/app.conf 0444 \"port=80\"\np/db/password 0400 \"hunter2\"\np/name 0444 \"web-abc-0\"\n", nil},
		{"downwardAPI: identity, labels and annotations as the kubelet formats them, resources",
			[]manifests.Volume{{Name: "d", DownwardAPI: &manifests.DownwardAPIVolumeSource{Items: []manifests.DownwardAPIVolumeFile{
				{Path: "ns", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
				{Path: "uid", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.uid"}},
				{Path: "labels", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "annotations", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.annotations"}},
				{Path: "tier", FieldRef: &manifests.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
				{Path: "mem", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "limits.memory", Divisor: qp("1Mi")}},
				{Path: "cpu", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "limits.cpu", Divisor: qp("1m")}},
				{Path: "cpureq", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "requests.cpu"}},
				{Path: "memreq", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "web", Resource: "requests.memory"}},
				{Path: "cpuhost", ResourceFieldRef: &manifests.ResourceFieldSelector{ContainerName: "side", Resource: "limits.cpu"}},
			}}}}, nil,
			"d/annotations 0644 \"note=\\\"say \\\\\\\"hi\\\\\\\"\\\"\"\nd/cpu 0644 \"500\"\nd/cpuhost 0644 \"4\"\nd/cpureq 0644 \"1\"\nd/labels 0644 \"app=\\\"web\\\"\\ntier=\\\"front\\\"\"\n" +
				"d/mem 0644 \"64\"\nd/memreq 0644 \"67108864\"\nd/ns 0644 \"shop\"\nd/tier 0644 \"front\"\nd/uid 0644 \"0a1b2c3d\"\n", nil},
		{"other volumes are not file volumes",
			[]manifests.Volume{{Name: "e", EmptyDir: &manifests.EmptyDirVolumeSource{}}}, nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := &manifests.PodSpec{Containers: []manifests.Container{container, {Name: "side"}}, Volumes: tt.vols}
			if tt.fsGroup != nil {
				ps.SecurityContext = &manifests.PodSecurityContext{FSGroup: tt.fsGroup}
			}
			p, err := PlanFiles(ps, id, objs, host)
			if len(tt.missing) > 0 {
				var me *VolumeRefsError
				if !errors.As(err, &me) {
					t.Fatalf("error %v, want a missing reference", err)
				}
				for _, m := range tt.missing {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not say %q", err, m)
					}
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "admin") {
					t.Errorf("the error quotes a Secret value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := renderFiles(p); got != tt.want {
				t.Errorf("payload:\n%s\nwant:\n%s", got, tt.want)
			}
			again, _ := PlanFiles(ps, id, objs, host)
			if PayloadHash(again) != PayloadHash(p) {
				t.Error("the same input gave another payload hash")
			}
		})
	}
}

func TestPayloadHashFollowsContent(t *testing.T) {
	ps := &manifests.PodSpec{Containers: []manifests.Container{{Name: "a"}},
		Volumes: []manifests.Volume{{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}}}}
	objs := func(v string) FileObjects {
		return FileObjects{ConfigMaps: map[string]*manifests.ConfigMap{"app": {Data: map[string]string{"k": v}}}}
	}
	a, _ := PlanFiles(ps, DownwardIdentity{}, objs("1"), HostResources{})
	b, _ := PlanFiles(ps, DownwardIdentity{}, objs("2"), HostResources{})
	if PayloadHash(a) == PayloadHash(b) {
		t.Error("two contents, one hash")
	}
	cms, ss := FileRefs(&manifests.PodSpec{Volumes: []manifests.Volume{
		{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "x"}},
		{Name: "b", Projected: &manifests.ProjectedVolumeSource{Sources: []manifests.VolumeProjection{
			{ConfigMap: &manifests.ConfigMapProjection{Name: "x"}}, {Secret: &manifests.SecretProjection{Name: "s"}}}}},
	}})
	if strings.Join(cms, ",") != "x" || strings.Join(ss, ",") != "s" {
		t.Errorf("FileRefs: %v %v", cms, ss)
	}
}

func qp(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func m32(v int32) *int32 { return &v }

func boolp(b bool) *bool { return &b }

// TestPlanVolumesEachOnItsOwn: the kubelet sets up each volume of a pod on
// its own, so one that refers to a missing ConfigMap, Secret or key (a
// projected volume's source included) is left out with the kubelet's
// FailedMount message, and the others are planned as when all resolve.
func TestPlanVolumesEachOnItsOwn(t *testing.T) {
	objs := FileObjects{
		ConfigMaps: map[string]*manifests.ConfigMap{"app": {Data: map[string]string{"k": "v"}}},
		Secrets:    map[string]*manifests.Secret{"db": {Data: map[string][]byte{"password": []byte("hunter2")}}},
	}
	tests := []struct {
		name        string
		vols        []manifests.Volume
		want        string
		failedMount []string
	}{
		{"all resolve: every volume",
			[]manifests.Volume{{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
				{Name: "s", Secret: &manifests.SecretVolumeSource{SecretName: "db"}}},
			"a/k 0644 \"v\"\ns/password 0644 \"hunter2\"\n", nil},
		{"a missing ConfigMap: its volume left out, the others planned",
			[]manifests.Volume{{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
				{Name: "b", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "gone"}},
				{Name: "s", Secret: &manifests.SecretVolumeSource{SecretName: "db"}}},
			"a/k 0644 \"v\"\ns/password 0644 \"hunter2\"\n",
			[]string{`MountVolume.SetUp failed for volume "b" : configmap "gone" not found`}},
		{"a projected volume with one missing source is left out whole",
			[]manifests.Volume{{Name: "a", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
				{Name: "p", Projected: &manifests.ProjectedVolumeSource{Sources: []manifests.VolumeProjection{
					{ConfigMap: &manifests.ConfigMapProjection{Name: "app"}},
					{Secret: &manifests.SecretProjection{Name: "db", Items: []manifests.KeyToPath{{Key: "nokey", Path: "x"}}}},
					{Secret: &manifests.SecretProjection{Name: "tls"}},
				}}}},
			"a/k 0644 \"v\"\n",
			[]string{`MountVolume.SetUp failed for volume "p" : secret "db" has no key "nokey"; secret "tls" not found`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := &manifests.PodSpec{Containers: []manifests.Container{{Name: "web"}}, Volumes: tt.vols}
			p, missing := PlanVolumes(ps, DownwardIdentity{Name: "web-abc-0"}, objs, HostResources{})
			if got := renderFiles(p); got != tt.want {
				t.Errorf("payload:\n%s\nwant:\n%s", got, tt.want)
			}
			var msgs []string
			for _, m := range missing {
				msgs = append(msgs, m.Message())
			}
			if strings.Join(msgs, "\n") != strings.Join(tt.failedMount, "\n") {
				t.Errorf("failed mounts %q, want %q", msgs, tt.failedMount)
			}
		})
	}
}
