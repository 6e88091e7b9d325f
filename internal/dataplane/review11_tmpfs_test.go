package dataplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/internal/testenv"
	"github.com/dockctl/dockctl/manifests"
)

// TestReviewFilesTmpfsSizeFitsValidConfigMap: a file volume is a tmpfs of
// manifests.FileVolumeSize bytes. A ConfigMap the validator accepts (1000
// keys of 1000 bytes: under the 1 MiB limit) must fit, and so must its
// update (the writer holds two versions at once). tmpfs charges a page per
// non-empty file, so it does not.
func TestReviewFilesTmpfsSizeFitsValidConfigMap(t *testing.T) {
	for _, tc := range []struct{ keys, size int }{{1000, 1000}, {600, 1700}} {
		t.Run(fmt.Sprintf("%dx%d", tc.keys, tc.size), func(t *testing.T) {
			cm := &manifests.ConfigMap{APIVersion: "v1", Kind: manifests.KindConfigMap, Metadata: manifests.ObjectMeta{Name: "big"}, Data: map[string]string{}}
			for i := 0; i < tc.keys; i++ {
				cm.Data[fmt.Sprintf("k%04d", i)] = strings.Repeat("x", tc.size)
			}
			if err := manifests.ValidateConfigMap(cm); err != nil {
				t.Fatalf("the ConfigMap is invalid: %v", err)
			}
			vol := manifests.Volume{Name: "cfg", ConfigMap: &manifests.ConfigMapVolumeSource{Name: "big"}}
			root := t.TempDir()
			dir := filepath.Join(root, "cfg")
			os.Mkdir(dir, 0o755)
			size := manifests.FileVolumeSize(&vol)
			if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
				testenv.Unavailable(t, "cannot mount a tmpfs here: %v", err)
			}
			defer syscall.Unmount(dir, 0)
			payload := func(v string) helperapi.FilesPayload {
				fv := helperapi.FilesVolume{Name: "cfg"}
				for k, val := range cm.Data {
					fv.Files = append(fv.Files, helperapi.FileItem{Path: k, Mode: 0o644, Data: []byte(v + val[len(v):])})
				}
				return helperapi.FilesPayload{Volumes: []helperapi.FilesVolume{fv}}
			}
			if _, err := WriteFiles(root, payload("a")); err != nil {
				t.Fatalf("first write into a %d-byte tmpfs: %v", size, err)
			}
			if _, err := WriteFiles(root, payload("b")); err != nil {
				t.Fatalf("update into a %d-byte tmpfs: %v", size, err)
			}
		})
	}
}
