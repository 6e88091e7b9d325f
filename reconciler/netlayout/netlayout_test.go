package netlayout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

func TestLayoutOf(t *testing.T) {
	tests := []struct {
		subnet                                        string
		ipRange, gateway, dns, first, last, wantError string
	}{
		{subnet: "10.222.0.0/20", ipRange: "10.222.0.0/21", gateway: "10.222.0.1", dns: "10.222.8.0", first: "10.222.8.1", last: "10.222.15.254"},
		{subnet: "10.222.16.0/20", ipRange: "10.222.16.0/21", gateway: "10.222.16.1", dns: "10.222.24.0", first: "10.222.24.1", last: "10.222.31.254"},
		{subnet: "192.168.7.0/24", ipRange: "192.168.7.0/25", gateway: "192.168.7.1", dns: "192.168.7.128", first: "192.168.7.129", last: "192.168.7.254"},
		{subnet: "172.30.0.16/28", ipRange: "172.30.0.16/29", gateway: "172.30.0.17", dns: "172.30.0.24", first: "172.30.0.25", last: "172.30.0.30"},
		{subnet: "10.0.0.0/29", wantError: "from /8 to /28"},
		{subnet: "fd00::/64", wantError: "IPv4"},
		{subnet: "10.222.0.1/20", wantError: "host bits"},
		{subnet: "not-a-cidr", wantError: "subnet"},
	}
	for _, tt := range tests {
		t.Run(tt.subnet, func(t *testing.T) {
			l, err := Of(tt.subnet)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("LayoutOf: %v, want an error containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%v %v %v %v %v", l.IPRange, l.Gateway, l.DNSIP, l.ServiceFirst, l.ServiceLast)
			want := strings.Join([]string{tt.ipRange, tt.gateway, tt.dns, tt.first, tt.last}, " ")
			if got != want {
				t.Errorf("layout %s, want %s", got, want)
			}
			if l.IPRange.Contains(l.DNSIP) || l.IPRange.Contains(l.ServiceFirst) || !l.Subnet.Contains(l.ServiceLast) {
				t.Errorf("static range overlaps Docker's or leaves the subnet: %+v", l)
			}
		})
	}
}

func TestLayoutFromStatus(t *testing.T) {
	l, err := FromStatus(&store.NetworkStatus{Name: "dockctl_i", Subnet: "10.222.0.0/20", DNSIP: "10.222.8.5"})
	if err != nil {
		t.Fatal(err)
	}
	if l.DNSIP.String() != "10.222.8.5" || l.ServiceFirst.String() != "10.222.8.6" {
		t.Errorf("DNS %s, first ClusterIP %s; want 10.222.8.5 and the address after it", l.DNSIP, l.ServiceFirst)
	}
	for _, ns := range []*store.NetworkStatus{nil, {Name: "n"}, {Name: "n", Subnet: "10.222.0.0/20", DNSIP: "10.9.9.9"}} {
		if _, err := FromStatus(ns); err == nil {
			t.Errorf("FromStatus(%+v): no error", ns)
		}
	}
}
