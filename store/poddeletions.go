package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Pod deletions (`dockctl delete pod`). The CLI never stops a container
// itself: the controller would race it (and start the stopped replica
// again). It records a request here instead, one file per deployment,
// pod-deletions/<deployment>.json in the namespace's directory; the
// controller reads the requests as an input of its plan, removes the pods
// through its graceful stop, and clears each request once its pod is gone.

// KindPodDeletion is what ParseWatchKey names the key of a deployment's
// pod-deletion requests: not a Kubernetes kind, the request of a DELETE
// of a pod, which the controller maps to the deployment's key.
const KindPodDeletion = "PodDeletion"

const (
	podDeletionsDir    = "pod-deletions"
	podDeletionPrefix  = "pod-deletion:"
	podDeletionVersion = formatVersion
)

// PodDeletionKey is the watch key of the pod-deletion requests of the
// deployment name of namespace: "pod-deletion:namespace/name".
func PodDeletionKey(namespace, name string) string { return podDeletionPrefix + Key(namespace, name) }

func podDeletionsPath(ns, deployment string) string {
	return filepath.Join(nsRoot(ns), podDeletionsDir, deployment+".json")
}

// PodDeletion is a request to delete one pod of a deployment.
type PodDeletion struct {
	// Pod is the pod's name, as `get pods` shows it (for people and
	// events; the controller matches by UID and Containers).
	Pod string `json:"pod"`
	// UID is the pod's uid when it has a holder (its io.dockctl.pod-uid
	// label), and Containers the IDs of its containers (holder included)
	// as the CLI observed them: the request applies to that pod only, never
	// to a newer pod of the same name.
	UID        string   `json:"uid,omitempty"`
	Containers []string `json:"containers"`
	// GracePeriodSeconds replaces the pod's terminationGracePeriodSeconds
	// (kubectl's --grace-period); nil keeps the pod's own, 0 kills it at
	// once (--grace-period=0 --force).
	GracePeriodSeconds *int64    `json:"gracePeriodSeconds,omitempty"`
	RequestedAt        time.Time `json:"requestedAt"`
}

// samePod reports whether d and o name the same pod incarnation.
func (d PodDeletion) samePod(o PodDeletion) bool {
	if d.UID != "" || o.UID != "" {
		return d.UID == o.UID
	}
	for _, id := range d.Containers {
		if slices.Contains(o.Containers, id) {
			return true
		}
	}
	return false
}

// equal reports whether d and o are the same request, field for field.
func (d PodDeletion) equal(o PodDeletion) bool {
	sameGrace := (d.GracePeriodSeconds == nil) == (o.GracePeriodSeconds == nil) &&
		(d.GracePeriodSeconds == nil || *d.GracePeriodSeconds == *o.GracePeriodSeconds)
	return d.Pod == o.Pod && d.UID == o.UID && slices.Equal(d.Containers, o.Containers) && sameGrace && d.RequestedAt.Equal(o.RequestedAt)
}

type podDeletionsFile struct {
	Version  int           `json:"version"`
	Requests []PodDeletion `json:"requests"`
}

// RequestPodDeletions records requests to delete pods of deployment name
// of namespace ns. A request for a pod already requested replaces the
// earlier one (so the file holds at most one request per pod that exists),
// except that a grace period only ever shortens, as the API server
// shortens, and never lengthens, the grace of a pod deleted again.
func (s *Store) RequestPodDeletions(ns, name string, reqs []PodDeletion) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return err
	}
	for _, r := range reqs {
		if len(r.Containers) == 0 && r.UID == "" {
			return fmt.Errorf("deleting pod %q: no container or uid names it", r.Pod)
		}
	}
	return s.transaction(func() error {
		cur, err := s.PodDeletions(ns, name)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err // a corrupt file is replaced: its requests are lost, the new ones are not
		}
		for _, r := range reqs {
			i := slices.IndexFunc(cur, r.samePod)
			if i < 0 {
				cur = append(cur, r)
				continue
			}
			r.GracePeriodSeconds = shorterGrace(cur[i].GracePeriodSeconds, r.GracePeriodSeconds)
			cur[i] = r
		}
		if err := s.ensureNamespaceDirs(ns); err != nil {
			return err
		}
		return s.writePodDeletions(ns, name, cur)
	})
}

// shorterGrace is the grace period of a pod deleted twice: the shorter of
// two explicit ones, or the explicit one.
func shorterGrace(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a < *b:
		return a
	}
	return b
}

// PodDeletions returns the pending pod-deletion requests of deployment
// name of namespace ns, oldest first; none is no error.
func (s *Store) PodDeletions(ns, name string) ([]PodDeletion, error) {
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return nil, err
	}
	rel := podDeletionsPath(ns, name)
	data, err := s.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	var f podDeletionsFile
	if err := decodeUpTo(data, &f, &f.Version, podDeletionVersion); err != nil {
		return nil, fmt.Errorf("state file %s: %w", rel, err)
	}
	return f.Requests, nil
}

// ClearPodDeletions drops the requests done (as PodDeletions returned
// them) of deployment name of namespace ns; a request recorded or changed
// since stays. The file goes with its last request, so that a deployment
// with none has none.
func (s *Store) ClearPodDeletions(ns, name string, done []PodDeletion) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if len(done) == 0 {
		return nil
	}
	if err := checkObject(KindDeployment, ns, name); err != nil {
		return err
	}
	return s.transaction(func() error {
		cur, err := s.PodDeletions(ns, name)
		if errors.Is(err, ErrCorrupt) {
			cur, err = nil, nil // unreadable, so never acted on: dropped with the rest
		}
		if err != nil {
			return err
		}
		left := slices.DeleteFunc(slices.Clone(cur), func(r PodDeletion) bool {
			return slices.ContainsFunc(done, r.equal)
		})
		if len(left) == len(cur) && len(cur) > 0 {
			return nil
		}
		return s.writePodDeletions(ns, name, left)
	})
}

// writePodDeletions replaces the requests of a deployment (the caller holds
// the write lock); none removes the file.
func (s *Store) writePodDeletions(ns, name string, reqs []PodDeletion) error {
	rel := podDeletionsPath(ns, name)
	if len(reqs) > 0 {
		return s.writeJSON(rel, podDeletionsFile{Version: podDeletionVersion, Requests: reqs})
	}
	err := os.Remove(filepath.Join(s.dir, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = syncDir(s.dirOf(rel))
	}
	if err != nil {
		return fmt.Errorf("state directory %s: clearing the pod deletions of %q: %w", s.dir, display(ns, name), err)
	}
	return nil
}
