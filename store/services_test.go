package store

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// TestServiceClusterIPIsImmutable: as core/v1's ValidateServiceUpdate, a
// cluster IP given may not change once set (clients cache the name's
// answer; a cluster refuses the change, so a history dockctl accepted
// would fail there). Leaving it out keeps the address, as the API server
// keeps an allocated one, and a deleted Service applied again may name
// another.
func TestServiceClusterIPIsImmutable(t *testing.T) {
	ip := func(a string) func(*manifests.Service) {
		return func(s *manifests.Service) { s.Spec.ClusterIP = a }
	}
	const refused = `the Service "web" is invalid: spec.clusterIPs[0]: Invalid value: "10.222.8.10": may not change once set`
	for _, tc := range []struct {
		name    string
		live    func(*manifests.Service)
		deleted bool
		next    func(*manifests.Service)
		wantErr string
	}{
		{name: "another address", live: ip("10.222.8.9"), next: ip("10.222.8.10"), wantErr: refused},
		{name: "the same address", live: ip("10.222.8.9"), next: ip("10.222.8.9")},
		{name: "the address left out", live: ip("10.222.8.9"), next: ip("")},
		{name: "an address given to a dynamic one", live: ip(""), next: ip("10.222.8.10")},
		{name: "another address after a delete", live: ip("10.222.8.9"), deleted: true, next: ip("10.222.8.10")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			if _, err := s.Apply(Bundle{Services: svcs(svc("", "web", tc.live))}, ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.deleted {
				if err := s.DeleteService("", "web"); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Apply(Bundle{Services: svcs(svc("", "web", tc.next))}, ApplyOptions{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("apply: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("apply: %v, want %q", err, tc.wantErr)
			}
			rec, err := s.LookupService("", "web")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && rec.Service.Spec.ClusterIP != "10.222.8.9" {
				t.Errorf("stored clusterIP %q after a refused change", rec.Service.Spec.ClusterIP)
			}
		})
	}
}
