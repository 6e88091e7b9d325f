package store

import (
	"errors"
)

// NetworkStatus is the controller's record of the instance network
// (docs/design.md §5, §10): which one it made, with which addresses, so that
// a restarted controller keeps them.
type NetworkStatus struct {
	// Version is the file format; WriteNetwork sets it.
	Version int    `json:"version"`
	Name    string `json:"name"`
	Subnet  string `json:"subnet"`
	IPRange string `json:"ipRange"`
	Gateway string `json:"gateway"`
	DNSIP   string `json:"dnsIP"`
}

// ReadNetwork returns the recorded instance network; (nil, nil) when none
// was written.
func (s *Store) ReadNetwork() (*NetworkStatus, error) {
	var n NetworkStatus
	if found, err := s.readState(networkFile, &n, &n.Version); !found || err != nil {
		return nil, err
	}
	return &n, nil
}

// WriteNetwork records the instance network, atomically.
func (s *Store) WriteNetwork(n *NetworkStatus) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if n == nil {
		return errors.New("network status: nil")
	}
	next := *n
	next.Version = formatVersion
	return s.transaction(func() error { return s.writeJSON(networkFile, next) })
}
