package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dockctl/dockctl/manifests"
)

// nsObj is a Namespace with the given labels (key, value pairs).
func nsObj(name string, kv ...string) *manifests.Namespace {
	n := &manifests.Namespace{APIVersion: "v1", Kind: "Namespace", Metadata: manifests.ObjectMeta{Name: name}}
	for i := 0; i+1 < len(kv); i += 2 {
		if n.Metadata.Labels == nil {
			n.Metadata.Labels = map[string]string{}
		}
		n.Metadata.Labels[kv[i]] = kv[i+1]
	}
	return n
}

func nss(names ...string) []*manifests.Namespace {
	out := make([]*manifests.Namespace, len(names))
	for i, n := range names {
		out[i] = nsObj(n)
	}
	return out
}

// svc is a ClusterIP Service of namespace ns selecting app=name.
func svc(ns, name string, muts ...func(*manifests.Service)) *manifests.Service {
	s := &manifests.Service{APIVersion: "v1", Kind: "Service",
		Metadata: manifests.ObjectMeta{Name: name, Namespace: ns},
		Spec: manifests.ServiceSpec{Type: manifests.ServiceTypeClusterIP, Selector: map[string]string{"app": name},
			Ports: []manifests.ServicePort{{Protocol: "TCP", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	for _, m := range muts {
		m(s)
	}
	return s
}

func svcs(s ...*manifests.Service) []*manifests.Service { return s }

// depIn is dep in namespace ns.
func depIn(ns, name string, muts ...func(*manifests.Deployment)) *manifests.Deployment {
	d := dep(name, muts...)
	d.Metadata.Namespace = ns
	return d
}

func ref(kind, ns, name string) ObjectRef { return ObjectRef{Kind: kind, Namespace: ns, Name: name} }

func res(kind, ns, name string, act Action, gen int64) ApplyResult {
	return ApplyResult{ObjectRef: ref(kind, ns, name), Action: act, Generation: gen}
}

func TestApplyBundle(t *testing.T) {
	port := func(p int32) func(*manifests.Service) {
		return func(s *manifests.Service) { s.Spec.Ports[0].Port = p }
	}
	label := func(k, v string) func(*manifests.Service) {
		return func(s *manifests.Service) { s.Metadata.Labels = map[string]string{k: v} }
	}
	tests := []struct {
		name  string
		steps []Bundle
		want  [][]ApplyResult
	}{
		{
			name: "namespace first, then services, then deployments, whatever the order given",
			steps: []Bundle{{
				Deployments: []*manifests.Deployment{depIn("team", "web"), dep("web")},
				Services:    svcs(svc("team", "web"), svc("", "web")),
				Namespaces:  nss("team"),
			}},
			want: [][]ApplyResult{{
				res(KindNamespace, "", "team", Created, 0),
				res(KindService, "team", "web", Created, 1), res(KindService, "default", "web", Created, 1),
				res(KindDeployment, "team", "web", Created, 1), res(KindDeployment, "default", "web", Created, 1),
			}},
		},
		{
			name: "generations of services follow deployments' rules",
			steps: []Bundle{
				{Services: svcs(svc("", "web"))},
				{Services: svcs(svc("", "web"))},
				{Services: svcs(svc("", "web", label("tier", "front")))}, // metadata only
				{Services: svcs(svc("", "web", label("tier", "front"), port(81)))},
			},
			want: [][]ApplyResult{
				{res(KindService, "default", "web", Created, 1)},
				{res(KindService, "default", "web", Unchanged, 1)},
				{res(KindService, "default", "web", Configured, 1)},
				{res(KindService, "default", "web", Configured, 2)},
			},
		},
		{
			name: "namespace labels; default always exists",
			steps: []Bundle{
				{Namespaces: nss("team", "default")},
				{Namespaces: []*manifests.Namespace{nsObj("team", "env", "prod"), nsObj("default", "env", "dev")}},
				{Namespaces: []*manifests.Namespace{nsObj("team", "env", "prod")}},
			},
			want: [][]ApplyResult{
				{res(KindNamespace, "", "team", Created, 0), res(KindNamespace, "", "default", Unchanged, 0)},
				{res(KindNamespace, "", "team", Configured, 0), res(KindNamespace, "", "default", Configured, 0)},
				{res(KindNamespace, "", "team", Unchanged, 0)},
			},
		},
		{
			// "" and "default" are one namespace: a file that says
			// default is the same object as one that says nothing.
			name: "explicit default namespace",
			steps: []Bundle{
				{Deployments: []*manifests.Deployment{dep("web")}, Services: svcs(svc("", "web"))},
				{Deployments: []*manifests.Deployment{depIn("default", "web")}, Services: svcs(svc("default", "web"))},
			},
			want: [][]ApplyResult{
				{res(KindService, "default", "web", Created, 1), res(KindDeployment, "default", "web", Created, 1)},
				{res(KindService, "default", "web", Unchanged, 1), res(KindDeployment, "default", "web", Unchanged, 1)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			for i, b := range tt.steps {
				got, err := s.Apply(b, ApplyOptions{})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Fatalf("step %d:\n got %v\nwant %v", i, got, tt.want[i])
				}
			}
		})
	}
}

// tree maps every file under dir to its content: what "nothing was
// written" compares.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		m[strings.TrimPrefix(path, dir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// An object may be stored only in a namespace that exists or that the
// same bundle creates; the refusal is kubectl's, and all or nothing.
func TestApplyRefusesMissingNamespace(t *testing.T) {
	tests := []struct {
		name string
		b    Bundle
		want string // "" for success
	}{
		{"deployment", Bundle{Deployments: []*manifests.Deployment{dep("api"), depIn("team", "web")}}, `deployment/web: namespaces "team" not found`},
		{"service", Bundle{Services: svcs(svc("team", "web"))}, `service/web: namespaces "team" not found`},
		{"another namespace created", Bundle{Namespaces: nss("other"), Deployments: []*manifests.Deployment{depIn("team", "web")}}, `namespaces "team" not found`},
		{"deleted namespace", Bundle{Deployments: []*manifests.Deployment{depIn("gone", "web")}}, `namespaces "gone" not found`},
		{"created by the bundle", Bundle{Namespaces: nss("team"), Deployments: []*manifests.Deployment{depIn("team", "web")}}, ""},
		{"revived by the bundle", Bundle{Namespaces: nss("gone"), Services: svcs(svc("gone", "web"))}, ""},
		{"invalid namespace", Bundle{Deployments: []*manifests.Deployment{depIn("Team", "web")}}, `invalid namespace "Team"`},
		{"path in namespace", Bundle{Deployments: []*manifests.Deployment{depIn("../x", "web")}}, `invalid namespace "../x"`},
		{"duplicate across kinds is fine, within a kind is not", Bundle{Namespaces: nss("team"),
			Services: svcs(svc("team", "web")), Deployments: []*manifests.Deployment{depIn("team", "web"), depIn("team", "web")}},
			`deployment "team/web" appears more than once`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			mustApplyBundle(t, s, Bundle{Namespaces: nss("gone")})
			if err := s.DeleteNamespace("gone"); err != nil {
				t.Fatal(err)
			}
			before := tree(t, s.Dir())
			for _, dry := range []bool{true, false} {
				_, err := s.Apply(tt.b, ApplyOptions{DryRun: dry})
				if tt.want == "" {
					if err != nil {
						t.Fatalf("dry %v: %v", dry, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("dry %v: error %v, want one containing %q", dry, err, tt.want)
				}
				if strings.Contains(tt.want, "namespaces") && !errors.Is(err, ErrNotFound) {
					t.Errorf("error %v does not wrap ErrNotFound", err)
				}
				if after := tree(t, s.Dir()); !reflect.DeepEqual(before, after) {
					t.Fatalf("a refused apply changed the state:\nbefore %v\nafter  %v", before, after)
				}
			}
		})
	}
}

func mustApplyBundle(t *testing.T, s *Store, b Bundle) []ApplyResult {
	t.Helper()
	r, err := s.Apply(b, ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return r
}

// Namespaces scope names: one name in two namespaces is two objects, with
// generations, statuses and histories of their own, kept apart on disk.
func TestSameNameInTwoNamespaces(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), Deployments: []*manifests.Deployment{dep("web"), depIn("team", "web")}})
	if _, err := s.Update("team", "web", func(d *manifests.Deployment) error { d.Spec.Template.Spec.Containers[0].Image = "nginx:2"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteStatus("team", "web", &Status{ObservedGeneration: 2}); err != nil {
		t.Fatal(err)
	}
	def, err := s.Get("", "web")
	if err != nil {
		t.Fatal(err)
	}
	team, err := s.Get("team", "web")
	if err != nil {
		t.Fatal(err)
	}
	if def.Generation != 1 || len(def.Revisions) != 1 || team.Generation != 2 || len(team.Revisions) != 2 {
		t.Errorf("default/web gen %d revs %d, team/web gen %d revs %d; want 1 1 and 2 2", def.Generation, len(def.Revisions), team.Generation, len(team.Revisions))
	}
	if def.Key() != "default/web" || team.Key() != "team/web" || def.Namespace != "" || team.Namespace != "team" {
		t.Errorf("keys %q %q, namespaces %q %q", def.Key(), team.Key(), def.Namespace, team.Namespace)
	}
	if st, _ := s.ReadStatus("", "web"); st.ObservedGeneration != 0 {
		t.Errorf("default/web's status = %+v, want none (team's is its own)", st)
	}
	all, errs := s.ListAll()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var keys []string
	for _, r := range all {
		keys = append(keys, r.Key())
	}
	if got := strings.Join(keys, " "); got != "default/web team/web" {
		t.Errorf("ListAll = %s", got)
	}
	// The layout: default where every earlier release kept it, others
	// under namespaces/.
	for _, rel := range []string{"deployments/web.json", "namespaces/team.json", "namespaces/team/deployments/web.json", "namespaces/team/status/web.json"} {
		fi, err := os.Stat(filepath.Join(s.Dir(), rel))
		if err != nil || fi.Mode().Perm() != filePerm {
			t.Errorf("%s: %v %v", rel, fi, err)
		}
	}
	for _, rel := range []string{"namespaces", "namespaces/team", "namespaces/team/deployments", "namespaces/team/status", "services", "service-status"} {
		fi, err := os.Stat(filepath.Join(s.Dir(), rel))
		if err != nil || fi.Mode().Perm() != dirPerm {
			t.Errorf("%s: %v %v", rel, fi, err)
		}
	}
	if err := s.Delete("team", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("", "web"); err != nil {
		t.Errorf("deleting team/web touched default/web: %v", err)
	}
}

// Deleting a namespace deletes everything in it (tombstones: the
// controller removes the containers), and nothing elsewhere.
func TestDeleteNamespace(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team", "other"),
		Services:    svcs(svc("team", "web"), svc("", "web")),
		Deployments: []*manifests.Deployment{depIn("team", "web"), depIn("team", "api"), dep("web"), depIn("other", "web")}})
	if err := s.Delete("team", "api"); err != nil { // already a tombstone: stays one
		t.Fatal(err)
	}
	if err := s.DeleteNamespace("team"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ns, name string
		deleted  bool
		gen      int64
	}{{"team", "web", true, 2}, {"team", "api", true, 2}, {"", "web", false, 1}, {"other", "web", false, 1}} {
		r, err := s.Lookup(tt.ns, tt.name)
		if err != nil || r.Deleted != tt.deleted || r.Generation != tt.gen {
			t.Errorf("%s/%s: %+v %v; want deleted %v generation %d", tt.ns, tt.name, r, err, tt.deleted, tt.gen)
		}
	}
	if r, err := s.LookupService("team", "web"); err != nil || !r.Deleted || r.Generation != 2 {
		t.Errorf("service team/web: %+v %v; want a tombstone of generation 2", r, err)
	}
	if r, err := s.LookupService("", "web"); err != nil || r.Deleted {
		t.Errorf("service default/web: %+v %v; want it live", r, err)
	}
	if r, err := s.LookupNamespace("team"); err != nil || !r.Deleted {
		t.Errorf("namespace team: %+v %v; want a tombstone", r, err)
	}
	// Nothing more goes into it until it is created again; what was in it
	// stays deleted then, and comes back as a new object when applied.
	if _, err := s.Apply(Bundle{Deployments: []*manifests.Deployment{depIn("team", "web")}}, ApplyOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("apply into a deleted namespace: %v, want not found", err)
	}
	got := mustApplyBundle(t, s, Bundle{Namespaces: nss("team")})
	if want := []ApplyResult{res(KindNamespace, "", "team", Created, 0)}; !reflect.DeepEqual(got, want) {
		t.Errorf("re-create = %v, want %v", got, want)
	}
	if _, err := s.Get("team", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("team/web after the namespace came back: %v, want still deleted", err)
	}
	got = mustApplyBundle(t, s, Bundle{Deployments: []*manifests.Deployment{depIn("team", "web")}})
	if want := []ApplyResult{res(KindDeployment, "team", "web", Created, 3)}; !reflect.DeepEqual(got, want) {
		t.Errorf("revival = %v, want %v", got, want)
	}

	for _, tt := range []struct {
		name string
		want string
		is   error
	}{
		{"default", `namespaces "default" is forbidden: this namespace may not be deleted`, nil},
		{"nope", `namespaces "nope" not found`, ErrNotFound},
		{"Bad", `invalid namespace name "Bad"`, nil},
	} {
		err := s.DeleteNamespace(tt.name)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("DeleteNamespace(%s) = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// DeleteObjects is one transaction for a delete -f: what is missing is
// reported per object and does not stop the others; what a namespace's
// deletion already took is no error.
func TestDeleteObjects(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), Services: svcs(svc("team", "web")),
		Deployments: []*manifests.Deployment{depIn("team", "web"), dep("web")}})
	got, err := s.DeleteObjects([]ObjectRef{
		ref(KindNamespace, "", "team"), ref(KindDeployment, "team", "web"), ref(KindService, "team", "web"),
		ref(KindDeployment, "", "nope"), ref(KindService, "", "web"), ref(KindDeployment, "", "web"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got {
		line := r.Kind + " " + r.Namespace + "/" + r.Name
		if r.Err != nil {
			line += ": " + r.Err.Error()
		}
		lines = append(lines, line)
	}
	want := []string{
		"Namespace /team", "Deployment team/web", "Service team/web",
		`Deployment default/nope: deployment "nope": not found`, `Service default/web: service "web": not found`, "Deployment default/web",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("results:\n got %q\nwant %q", lines, want)
	}
	if r, _ := s.Lookup("team", "web"); r == nil || r.Generation != 2 {
		t.Errorf("team/web = %+v: want tombstoned once (generation 2)", r)
	}
	if _, err := s.DeleteObjects([]ObjectRef{ref("Widget", "", "x")}); err == nil {
		t.Error("deleting an unknown kind succeeded")
	}
}

// A Service's status (its allocated address and nodePorts) is the
// controller's: re-applying, deleting or reviving the Service keeps it.
func TestServiceStatusKept(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"), Services: svcs(svc("team", "web"))})
	if st, err := s.ReadServiceStatus("team", "web"); st != nil || err != nil {
		t.Fatalf("status before any write = %+v, %v; want nil, nil", st, err)
	}
	st := &ServiceStatus{ObservedGeneration: 1, ClusterIP: "10.222.8.2",
		NodePorts:  []NodePortStatus{{Port: 80, Protocol: "TCP", NodePort: 30080}},
		Endpoints:  []EndpointStatus{{Pod: "web-abc-0", IP: "10.222.0.5", Ready: true, Ports: []EndpointPort{{Port: 8080, Protocol: "TCP"}}}},
		Conditions: []Condition{{Type: "PortConflict", Status: "False"}}}
	if err := s.WriteServiceStatus("team", "web", st); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(s.Dir(), "namespaces/team/service-status/web.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The same status again, whatever its time, writes nothing.
	again := *st
	if err := s.WriteServiceStatus("team", "web", &again); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Dir(), "namespaces/team/service-status/web.json")); string(b) != string(written) {
		t.Error("an unchanged service status was rewritten")
	}
	for _, step := range []func() error{
		func() error {
			_, err := s.Apply(Bundle{Services: svcs(svc("team", "web", func(s *manifests.Service) { s.Spec.Ports[0].Port = 81 }))}, ApplyOptions{})
			return err
		},
		func() error { return s.DeleteService("team", "web") },
		func() error {
			_, err := s.Apply(Bundle{Services: svcs(svc("team", "web"))}, ApplyOptions{})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadServiceStatus("team", "web")
		if err != nil || got.ClusterIP != "10.222.8.2" || len(got.NodePorts) != 1 || got.Version != formatVersion {
			t.Fatalf("status = %+v, %v; want the allocated one kept", got, err)
		}
	}
	r, err := s.LookupService("team", "web")
	if err != nil || r.Deleted || r.Generation != 4 || r.Service.Metadata.Generation != 4 || r.Service.Metadata.CreationTimestamp == nil {
		t.Errorf("revived service = %+v, %v; want live, generation 4 (create, port, delete, revive)", r, err)
	}
	recs, errs := s.ListServices()
	if len(errs) > 0 || len(recs) != 1 || recs[0].Key() != "team/web" {
		t.Errorf("ListServices = %v, %v", recs, errs)
	}
	if err := s.DeleteService("team", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteService of a missing one = %v", err)
	}
}

func TestListNamespaces(t *testing.T) {
	s := openTemp(t)
	got, err := s.ListNamespaces()
	if err != nil || len(got) != 1 || got[0].Namespace.Metadata.Name != "default" || got[0].Created.IsZero() {
		t.Fatalf("a new state directory's namespaces = %+v, %v; want default, created with it", got, err)
	}
	mustApplyBundle(t, s, Bundle{Namespaces: []*manifests.Namespace{nsObj("team", "env", "prod"), nsObj("a")}})
	if err := s.DeleteNamespace("a"); err != nil {
		t.Fatal(err)
	}
	got, err = s.ListNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Namespace.Metadata.Name+map[bool]string{true: "(deleted)"}[r.Deleted])
	}
	if strings.Join(names, " ") != "a(deleted) default team" {
		t.Errorf("ListNamespaces = %v", names)
	}
	if r, err := s.LookupNamespace("team"); err != nil || r.Namespace.Metadata.Labels["env"] != "prod" {
		t.Errorf("LookupNamespace(team) = %+v, %v", r, err)
	}
	if _, err := s.LookupNamespace("nope"); err == nil || err.Error() != `namespaces "nope" not found` {
		t.Errorf("LookupNamespace(nope) = %v", err)
	}
}

// The controller's record of the instance network.
func TestNetwork(t *testing.T) {
	s := openTemp(t)
	if n, err := s.ReadNetwork(); n != nil || err != nil {
		t.Fatalf("ReadNetwork before any write = %+v, %v", n, err)
	}
	want := NetworkStatus{Name: "dockctl_default", Subnet: "10.222.0.0/20", IPRange: "10.222.0.0/21", Gateway: "10.222.0.1", DNSIP: "10.222.8.1"}
	if err := s.WriteNetwork(&want); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadNetwork()
	want.Version = formatVersion
	if err != nil || *got != want {
		t.Errorf("ReadNetwork = %+v, %v; want %+v", got, err, want)
	}
	ro, err := OpenReadOnly(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.WriteNetwork(&want); !errors.Is(err, ErrReadOnly) {
		t.Errorf("WriteNetwork on a read-only store = %v", err)
	}
}

// Prune looks only in the namespaces the bundle's objects are in, as
// kubectl prunes the namespaces it visited, and prunes services too.
func TestPruneByNamespace(t *testing.T) {
	s := openTemp(t)
	mustApplyBundle(t, s, Bundle{Namespaces: nss("team"),
		Services:    svcs(svc("team", "web"), svc("team", "old"), svc("", "web")),
		Deployments: []*manifests.Deployment{depIn("team", "web"), depIn("team", "old"), dep("web"), dep("other")}})
	got, err := s.Apply(Bundle{Services: svcs(svc("team", "web")), Deployments: []*manifests.Deployment{depIn("team", "web")}}, ApplyOptions{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []ApplyResult{
		res(KindService, "team", "web", Unchanged, 1), res(KindDeployment, "team", "web", Unchanged, 1),
		res(KindDeployment, "team", "old", Pruned, 2), res(KindService, "team", "old", Pruned, 2),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prune:\n got %v\nwant %v", got, want)
	}
	for _, n := range []string{"web", "other"} {
		if _, err := s.Get("", n); err != nil {
			t.Errorf("default/%s pruned from a namespace the bundle did not visit: %v", n, err)
		}
	}
	if r, err := s.LookupNamespace("team"); err != nil || r.Deleted {
		t.Errorf("namespace pruned: %+v %v", r, err)
	}
}

// A state directory of an earlier release (no services/, no namespaces/)
// opened read-only lists what it has and nothing else, without error.
func TestReadOnlyEarlierLayout(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, ApplyOptions{}, dep("web"))
	for _, d := range []string{"services", "service-status", "namespaces"} {
		if err := os.Remove(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := OpenReadOnly(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	recs, errs := ro.ListAll()
	svcList, serrs := ro.ListServices()
	nsList, nerr := ro.ListNamespaces()
	if len(errs)+len(serrs) > 0 || nerr != nil || len(recs) != 1 || len(svcList) != 0 || len(nsList) != 1 {
		t.Errorf("ListAll %v %v, ListServices %v %v, ListNamespaces %v %v", recs, errs, svcList, serrs, nsList, nerr)
	}
}

func TestKeys(t *testing.T) {
	for _, tt := range []struct {
		key, kind, ns, name string
	}{
		{Key("", "web"), KindDeployment, "default", "web"},
		{Key("team", "web"), KindDeployment, "team", "web"},
		{ServiceKey("", "web"), KindService, "default", "web"},
		{ServiceKey("team", "web"), KindService, "team", "web"},
		{NamespaceKey("team"), KindNamespace, "", "team"},
		{PodDeletionKey("", "web"), KindPodDeletion, "default", "web"},
		{PodDeletionKey("team", "web"), KindPodDeletion, "team", "web"},
		{"pod-deletion:web", "", "", ""},
		{"", "", "", ""},
		{"*", "", "", ""},
		{"web", "", "", ""},
		{"service:web", "", "", ""},
		{"a/b/c", "", "", ""},
		{"namespace:", "", "", ""},
	} {
		kind, ns, name := ParseWatchKey(tt.key)
		if kind != tt.kind || ns != tt.ns || name != tt.name {
			t.Errorf("ParseWatchKey(%q) = %q %q %q, want %q %q %q", tt.key, kind, ns, name, tt.kind, tt.ns, tt.name)
		}
	}
	if Key("", "web") != "default/web" || ServiceKey("team", "web") != "service:team/web" || NamespaceKey("x") != "namespace:x" {
		t.Error("key formats changed: store/doc.go documents them")
	}
}
