package sourcedir

import (
	"path/filepath"

	"github.com/dockctl/dockctl/internal/kustomize"
)

// readKustomization reads a path that holds a kustomization (real is the
// path, its links resolved) as one unit, as Flux's kustomize-controller
// does: its build (generators run, transformers applied) is the path's
// one "file", named after the kustomization file under the path as given.
// The files it builds from are kustomize's inputs, not objects, and are
// not read on their own. A build that fails refuses that one file, so
// the sync deletes nothing and the last good state stays (the package's
// "Last good state").
func (s *Syncer) readKustomization(src *source, real string) {
	name := filepath.Join(src.path, filepath.Base(kustomize.File(real)))
	src.files++
	data, err := kustomize.Build(real)
	if err != nil {
		src.bad[name] = err
		return
	}
	s.decode(src, name, data)
}
