package reconciler

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/store"
)

// restartsKey holds, in the controller's status record, how many times
// dockctl restarted each container. Docker's own RestartCount stays 0
// because dockctl, not a restart policy, starts them again.
const restartsKey = "restarts"

// RestartCount returns how many times dockctl restarted the named container.
func RestartCount(st *store.Status, name string) int {
	counts, _ := readRestarts(st)
	return counts[name]
}

func readRestarts(st *store.Status) (map[string]int, error) {
	counts := map[string]int{}
	raw, ok := st.Extra[restartsKey]
	if !ok {
		return counts, nil
	}
	if err := json.Unmarshal(raw, &counts); err != nil {
		return map[string]int{}, fmt.Errorf("status restarts: %w", err)
	}
	return counts, nil
}

// updateRestarts adds this sync's restarts and forgets containers that no
// longer exist. It reports whether anything changed.
func updateRestarts(st *store.Status, observed []dockerx.Container, restarted []string) (bool, error) {
	prev, _ := readRestarts(st) // a garbled count is reset rather than blocking the sync
	next := map[string]int{}
	for _, c := range observed {
		if n, ok := prev[c.Name]; ok {
			next[c.Name] = n
		}
	}
	for _, name := range restarted {
		next[name]++
	}
	if maps.Equal(prev, next) {
		return false, nil
	}
	extra := maps.Clone(st.Extra)
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	if len(next) == 0 {
		delete(extra, restartsKey)
	} else {
		b, err := json.Marshal(next)
		if err != nil {
			return false, err
		}
		extra[restartsKey] = b
	}
	st.Extra = extra
	return true, nil
}
