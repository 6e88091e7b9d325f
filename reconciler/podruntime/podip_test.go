package podruntime

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/dockctl/dockctl/reconciler/netlayout"
)

func TestPickPodIP(t *testing.T) {
	l, err := netlayout.Of("10.222.0.0/28") // IPRange 10.222.0.0/29: .0-.7, gateway .1
	if err != nil {
		t.Fatal(err)
	}
	used := map[netip.Addr]bool{}
	var got []string
	for {
		a, ok := PickPodIP(l, used)
		if !ok {
			break
		}
		used[a] = true
		got = append(got, a.String())
	}
	want := []string{"10.222.0.7", "10.222.0.6", "10.222.0.5", "10.222.0.4", "10.222.0.3", "10.222.0.2"}
	if !slices.Equal(got, want) {
		t.Errorf("picked %q, want %q (top down, never the network nor the gateway)", got, want)
	}
}
