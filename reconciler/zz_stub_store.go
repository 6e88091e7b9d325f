package reconciler

// Stand-in for the store's controller-level network record (svc.md,
// "Store"), replaced when "ns" lands: NetworkStatus moves to store and
// networkStore's methods join Store.

// NetworkStatus is the instance network as the controller last ensured it.
type NetworkStatus struct {
	Version                               int
	Name, Subnet, IPRange, Gateway, DNSIP string
}

type networkStore interface {
	ReadNetwork() (*NetworkStatus, error)
	WriteNetwork(*NetworkStatus) error
}
