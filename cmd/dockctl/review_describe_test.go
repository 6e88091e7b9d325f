package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

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
