package podruntime

import (
	"errors"
	"testing"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// TestFileVolumesObjects: a sync reads each source once (the cache), an
// object that does not exist is nil, and any other failure is an error
// naming the record.
func TestFileVolumesObjects(t *testing.T) {
	cm := &manifests.ConfigMap{}
	cfg := &fakeConfig{cms: map[string]*manifests.ConfigMap{store.Key("ns", "app"): cm}}
	v := &FileVolumes{Config: cfg}
	tmpl := &manifests.PodTemplateSpec{}
	tmpl.Spec.Volumes = []manifests.Volume{
		{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "app"}},
		{Name: "sec", Secret: &manifests.SecretVolumeSource{SecretName: "gone"}},
	}
	var cache FileObjectCache
	for range 2 {
		objs, err := v.Objects("ns", tmpl, &cache)
		if err != nil || objs.ConfigMaps["app"] != cm || objs.Secrets["gone"] != nil {
			t.Fatalf("Objects = %+v, %v; want the configmap and a nil secret", objs, err)
		}
		if _, ok := objs.Secrets["gone"]; !ok {
			t.Fatal("the missing secret is not listed as missing")
		}
	}
	if cfg.lookups != 2 {
		t.Fatalf("%d lookups for two syncs' reads of one cache; want one per source", cfg.lookups)
	}
	cfg.fail = errors.New("unreadable record")
	if _, err := v.Objects("ns", tmpl, &FileObjectCache{}); err == nil || err.Error() != "configmap ns/app: unreadable record" {
		t.Fatalf("an unreadable record: %v; want an error naming it", err)
	}
	if objs, err := (&FileVolumes{}).Objects("ns", tmpl, &FileObjectCache{}); err != nil || objs.ConfigMaps["app"] != nil {
		t.Fatalf("without a ConfigStore: %+v, %v; want every source missing", objs, err)
	}
}
