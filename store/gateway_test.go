package store

import (
	"errors"
	"slices"
	"testing"
)

// TestGatewayStatusIsKeptAcrossOpens: the gateway's claims on ports the
// host holds are read back as written (by a later Open: a restarted
// controller), none before any write; a read-only store refuses a write.
func TestGatewayStatusIsKeptAcrossOpens(t *testing.T) {
	s := openTemp(t)
	if g, err := s.ReadGateway(); g != nil || err != nil {
		t.Fatalf("ReadGateway before any write = %+v, %v", g, err)
	}
	if err := s.WriteGateway(&GatewayStatus{HostHeld: []int{18080, 18443}}); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(s.Dir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ro.ReadGateway()
	if err != nil || g == nil || g.Version != formatVersion || !slices.Equal(g.HostHeld, []int{18080, 18443}) {
		t.Errorf("ReadGateway = %+v, %v; want 18080 18443 held, version %d", g, err, formatVersion)
	}
	if err := ro.WriteGateway(&GatewayStatus{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("WriteGateway on a read-only store = %v", err)
	}
}
