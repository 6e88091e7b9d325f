package store

import (
	"errors"
	"fmt"
	"io/fs"
)

// NetworkStatus is the controller's record of the instance network (DESIGN
// §10.1): which one it made, with which addresses, so that a restarted
// controller keeps them.
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
	data, err := s.readFile(networkFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w", networkFile, err)
	}
	var n NetworkStatus
	if err := decodeVersioned(data, &n, &n.Version); err != nil {
		return nil, fmt.Errorf("state file %s: %w", networkFile, err)
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
