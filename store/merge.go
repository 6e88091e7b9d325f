package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"

	"github.com/dockctl/dockctl/manifests"
)

// An apply merges, as kubectl's client-side apply does: the file's fields
// win; a field the previous apply declared and the file no longer does is
// removed; a field neither declares — a label of `dockctl label`, the
// restartedAt annotation of `rollout restart`, replicas after `scale` when
// the file leaves them out — is kept. kubectl keeps the previous apply's
// configuration in the kubectl.kubernetes.io/last-applied-configuration
// annotation; the store keeps it in the record (Applied), beside the
// object and never in it, so that nothing shown or hashed changes. The
// merge is a JSON merge patch, kubectl's for kinds without strategic
// merge keys: lists (containers, ports, env) are replaced whole by the
// file's.

// Applied is the configuration an object's applier (`apply -f`, a
// manifests directory) last applied: the object as its file declared it,
// canonical JSON, before anything of the live object was kept. A record
// of an earlier release, or of an object only a CLI command (create
// namespace) stored, has none: the next apply replaces such an object
// with its file, as earlier releases did, and records it. A Secret's holds
// its values: its record is 0600, and a tombstone keeps none.
type Applied struct {
	LastApplied json.RawMessage `json:"lastAppliedConfiguration,omitempty"`
}

// threeWay returns live (the stored object as canonical JSON) with file
// (the object as the file declares it) applied over last (the previous
// apply's configuration), decoded: kubectl apply's three-way JSON merge.
func threeWay[T any](last, file, live []byte) (T, error) {
	var out T
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(last, file, live)
	if err != nil {
		return out, err
	}
	merged, err := jsonpatch.MergePatch(live, patch)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(merged, &out); err != nil {
		return out, err
	}
	return out, nil
}

// mergeLive returns what an apply of file (canonical JSON) stores over
// live (nil: none, or a tombstone) whose record holds last: nil when the
// file is stored as it is — a new object, an update (patch and edit
// store a whole object: what it lacks was removed), an object with no
// last-applied configuration — else the three-way merge (threeWay). kind
// words an error; a Secret's never quotes the merge's, which may hold
// values.
func mergeLive[T any](kind, name string, update bool, live *T, last json.RawMessage, file []byte, norm func(*T) ([]byte, error)) (*T, error) {
	if update || live == nil || len(last) == 0 {
		return nil, nil
	}
	cur, err := norm(live)
	if err != nil {
		return nil, fmt.Errorf("%s %q: stored copy: %w", lower(kind), name, err)
	}
	m, err := threeWay[T](last, file, cur)
	if err != nil {
		if kind == KindSecret {
			return nil, fmt.Errorf("%s %q: merging the file with the stored object failed", lower(kind), name)
		}
		return nil, fmt.Errorf("%s %q: merging the file with the stored object: %w", lower(kind), name, err)
	}
	return &m, nil
}

// invalidMerge words the refusal of a merged object that does not
// validate (a field kept from the live object that the file's no longer
// allow), as the API server refuses it.
func invalidMerge(kind, name string, err error) error {
	return fmt.Errorf("the %s %q is invalid once merged with the stored object (the fields the file does not set are kept): %w", kind, name, err)
}

// mergeNormalized is mergeLive for the kinds whose merge needs nothing
// more: n (the file's object normalized, norm's N, allOf its canonical
// JSON; file that JSON with the file's zeros, withZeros) itself, or the
// merge, validated and normalized.
func mergeNormalized[T, N any](kind, name string, opts ApplyOptions, live *T, last json.RawMessage, n N, file []byte,
	norm func(*T) (N, error), allOf func(N) []byte, validate func(*T) error) (N, error) {
	m, err := mergeLive(kind, name, opts.Updater != "", live, last, file, func(x *T) ([]byte, error) {
		nn, err := norm(x)
		return allOf(nn), err
	})
	if err != nil || m == nil {
		return n, err
	}
	if err := validate(m); err != nil {
		return n, invalidMerge(kind, name, err)
	}
	merged, err := norm(m)
	if err != nil {
		return n, fmt.Errorf("%s %q: %w", lower(kind), name, err)
	}
	return merged, nil
}

// withZeros returns file (an object's canonical JSON) with the boolean
// and integer fields its file set to false or 0 (zeros, by path:
// spec.template.spec.hostNetwork, containers[0].stdin), which the typed
// object's JSON leaves out (omitempty): the JSON kubectl would send. The
// merge then takes them as the file's values, as kubectl's three-way
// merge takes every field the file declares, so that hostNetwork: false
// undoes an edit to true (a field the file leaves out keeps the edit). It
// is also the last-applied configuration recorded: a later file that
// drops the field removes it. A field the JSON holds (a default filled
// in) is left as it is.
func withZeros(file []byte, zeros map[string]any) ([]byte, error) {
	if len(zeros) == 0 {
		return file, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(file, &obj); err != nil {
		return nil, fmt.Errorf("adding the fields set to zero: %w", err)
	}
	for path, v := range zeros {
		setZero(obj, zeroPath(path), v)
	}
	return json.Marshal(obj)
}

// zeroPath splits a field path (a.b[2].c) into its names and list
// indexes (ints).
func zeroPath(path string) []any {
	var out []any
	for _, seg := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		out = append(out, name)
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if !ok || err != nil {
				return nil // a map key: no zero field is under one
			}
			out = append(out, i)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

// setZero sets the field at path of obj to v unless it is there: the
// objects on the way that the JSON left out (empty) are added, a list
// item that is not there ends the walk.
func setZero(obj map[string]any, path []any, v any) {
	var cur any = obj
	for i, seg := range path {
		last := i == len(path)-1
		switch s := seg.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return
			}
			if last {
				if _, ok := m[s]; !ok {
					m[s] = v
				}
				return
			}
			next, ok := m[s]
			if !ok {
				if _, isIndex := path[i+1].(int); isIndex {
					return
				}
				next = map[string]any{}
				m[s] = next
			}
			cur = next
		case int:
			l, ok := cur.([]any)
			if !ok || s >= len(l) || last {
				return
			}
			cur = l[s]
		}
	}
}

// remember records applied (the file's object, canonical JSON) as rec's
// last-applied configuration when opts says the apply is an applier's
// that saves it, and returns the record to write and whether to write
// it: a record unchanged but for it is written too (its action stays
// unchanged), as kubectl apply adds its annotation to an object that
// lacks it. rec is copied rather than changed when it is old itself.
func remember[R any](opts ApplyOptions, old, rec *R, write bool, applied []byte, of func(*R) *Applied) (*R, bool) {
	if !opts.SaveConfig || opts.Updater != "" || sameJSON(of(rec).LastApplied, applied) {
		return rec, write
	}
	if rec == old {
		cp := *rec
		rec = &cp
	}
	of(rec).LastApplied = append(json.RawMessage(nil), applied...)
	return rec, true
}

// mergeDeployment returns the deployment an apply stores for d (the
// file's, normalized; file its canonical JSON) over old (nil: never known)
// whose live object is live (nil: none, or a tombstone): merged with the
// live one (mergeLive); without a last-applied configuration, d with what
// keepLive keeps of the live one, as earlier releases stored it; for an
// update, d whole.
func mergeDeployment(live *manifests.Deployment, old *Record, d manifests.Deployment, file []byte, opts ApplyOptions) (manifests.Deployment, error) {
	keepPaused := opts.KeepPaused[Key(d.Metadata.Namespace, d.Metadata.Name)]
	var last json.RawMessage
	if live != nil {
		last = old.LastApplied
	}
	name := display(d.Metadata.Namespace, d.Metadata.Name)
	m, err := mergeLive(KindDeployment, name, opts.Updater != "", live, last, file, func(x *manifests.Deployment) ([]byte, error) {
		n, err := normalize(x)
		return n.all, err
	})
	switch {
	case err != nil:
		return d, err
	case m != nil:
		// A paused the file sets to false is no field of its JSON, which
		// the merge cannot tell from one it leaves out.
		if !keepPaused {
			m.Spec.Paused = d.Spec.Paused
		}
		// replicas the previous apply set and the file no longer does
		// are removed: the default, as the API server defaults them.
		if err := keepLive(nil, m, false); err != nil {
			return d, err
		}
		if err := manifests.Validate(m); err != nil {
			return d, invalidMerge(manifests.Kind, name, err)
		}
		return *m, nil
	case opts.Updater != "":
		live, keepPaused = nil, false
	}
	return d, keepLive(live, &d, keepPaused)
}
