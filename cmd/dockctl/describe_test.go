package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// describeServicesInstance is an instance on a fake daemon whose store
// holds servicesYAML's Services with their statuses, namespace team (with
// labels and an annotation), and an event about Service web and one about
// its Endpoints, at a fixed clock.
func describeServicesInstance(t *testing.T) []string {
	t.Helper()
	_, base, st := fakeInstance(t)
	docs, err := manifests.Decode("services.yaml", []byte(servicesYAML))
	if err != nil {
		t.Fatal(err)
	}
	team := &manifests.Namespace{Metadata: manifests.ObjectMeta{Name: "team",
		Labels: map[string]string{"tier": "back"}, Annotations: map[string]string{"owner": "shop",
			// kubectl's printAnnotationsMultiline: a value of several
			// lines, or longer than 140 with its key, under its key,
			// each line indented and cut at 138; the last-applied
			// configuration never shown.
			"notes":     strings.Repeat("x", 150),
			"runbook":   "step one\nstep two\n",
			lastApplied: `{"kind":"Namespace"}`}}}
	b := store.Bundle{Namespaces: []*manifests.Namespace{team}}
	for _, d := range docs {
		b.Services = append(b.Services, d.Service)
	}
	if _, err := st.Apply(b, store.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for key, status := range serviceStatuses() {
		ns, name, _ := strings.Cut(key, "/")
		if err := st.WriteServiceStatus(ns, name, status); err != nil {
			t.Fatal(err)
		}
	}
	// The store expires events by the real clock: recent ones, aged by a
	// fixed clock.
	now := time.Now().Add(-time.Minute)
	old := eventsNow
	eventsNow = func() time.Time { return now }
	t.Cleanup(func() { eventsNow = old })
	ev := func(kind, reason, msg string) store.Event {
		return store.Event{Type: store.EventWarning, Reason: reason, Message: msg, Source: "dockctl-controller", Count: 1,
			InvolvedObject: store.InvolvedObject{Kind: kind, Name: "web"}, FirstTimestamp: now.Add(-time.Minute), LastTimestamp: now.Add(-time.Minute)}
	}
	if err := st.RecordEvents([]store.Event{
		ev("Service", "ProxyFailure", "proxy of web failed"),
		ev("Endpoints", "FailedToUpdateEndpoint", "endpoints of web not pushed"),
	}); err != nil {
		t.Fatal(err)
	}
	return base
}

// describe prints one Events section, the last, with the object's events
// (kubectl's describers end with DescribeEvents, once); and it describes
// namespaces and endpoints, as kubectl's NamespaceDescriber and
// EndpointsDescriber do (Name, Labels, Annotations, Status; Name,
// Namespace, Labels, Annotations, Subsets with Addresses,
// NotReadyAddresses and Ports, then Events), since every other verb that
// takes those kinds accepts them.
func TestDescribeServiceEndpointsNamespace(t *testing.T) {
	base := describeServicesInstance(t)
	tests := []struct {
		args []string
		// golden: the whole output; otherwise events: the reason of the
		// one event of its Events section ("" for <none>).
		golden, events string
		wantErr        string
	}{
		{args: []string{"describe", "svc", "web"}, events: "ProxyFailure"},
		{args: []string{"describe", "service", "api"}, events: ""},
		{args: []string{"describe", "endpoints", "web"}, golden: "describe-endpoints-web"},
		{args: []string{"describe", "ep/api"}, golden: "describe-endpoints-api"},
		{args: []string{"describe", "ep", "db"}, golden: "describe-endpoints-db"},
		{args: []string{"describe", "ep", "web", "-n", "team"}, events: ""},
		// As get: a Service without a selector has no managed endpoints.
		{args: []string{"describe", "ep", "external"}, wantErr: `endpoints "external" not found in instance "t1"`},
		{args: []string{"describe", "ns", "team"}, golden: "describe-namespace-team"},
		{args: []string{"describe", "namespace/default"}, golden: "describe-namespace-default"},
		{args: []string{"describe", "namespace", "nope"}, wantErr: `namespaces "nope" not found in instance "t1"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := run(t, "", append(base, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v: %s", err, errOut)
			}
			if tt.golden != "" {
				golden(t, tt.golden, []byte(out))
				return
			}
			if n := strings.Count(out, "\nEvents:"); n != 1 {
				t.Fatalf("%d Events sections, want 1:\n%s", n, out)
			}
			_, section, _ := strings.Cut(out, "\nEvents:")
			if tt.events == "" {
				if section != "  <none>\n" {
					t.Errorf("Events section %q, want <none> and nothing after it", section)
				}
				return
			}
			if lines := strings.Split(strings.TrimSuffix(section, "\n"), "\n"); len(lines) != 4 || !strings.Contains(lines[3], " "+tt.events+" ") {
				t.Errorf("Events section, want a header and the %s event, last:\n%s", tt.events, section)
			}
		})
	}
}

// kubectl describe pod shows each container's Environment (a Secret's
// variable as "<set to the key 'password' in secret 'db'>", never its
// value) and "Environment Variables from", then the pod's Volumes (a Secret
// volume by its SecretName), as describe deployment shows them for the
// template (describeEnv): a user sees from the pod where its variables and
// files come from.
func TestDescribePodShowsEnvironmentAndVolumes(t *testing.T) {
	snap, _ := storeFixture(t)
	var buf bytes.Buffer
	describePod(&buf, snap, snap.allPods()[0])
	out := buf.String()
	for _, want := range []string{
		"    Environment:",
		"<set to the key 'password' in secret 'db'>",
		"Volumes:",
		"SecretName:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pod has no %q (kubectl's describe pod has):\n%s", want, out)
		}
	}
}

// A record edited by hand (or written by another release) without a
// selector is only "invalid" for the controller, which keeps running it;
// `describe` must show it, not panic on the missing selector.
func TestDescribeRecordWithoutSelector(t *testing.T) {
	d := manifests.Deployment{APIVersion: manifests.APIVersion, Kind: manifests.Kind, Metadata: manifests.ObjectMeta{Name: "web"},
		Spec: manifests.DeploymentSpec{Template: manifests.PodTemplateSpec{Spec: manifests.PodSpec{
			Containers: []manifests.Container{{Name: "web", Image: "img:1"}}}}}}
	rec := &store.Record{Name: "web", Generation: 1, CreatedAt: time.Now(), Deployment: d}
	snap := &snapshot{instance: "i", records: []*store.Record{rec}, statuses: map[string]*store.Status{}, now: time.Now()}
	var out bytes.Buffer
	describe(&out, snap, snap.deploymentObject(rec), false)
	if !strings.Contains(out.String(), "Selector:") {
		t.Fatalf("no selector line:\n%s", out.String())
	}
}
