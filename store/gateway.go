package store

import (
	"errors"
)

// GatewayStatus is the Service controller's record of the gateway helper
// (docs/design.md §5, §10): the ports of its table a process of the host
// holds, its claim still, so that a restarted controller keeps them for
// it before the gateway's first sync, whether or not its helper runs
// (the helper's state file is on a tmpfs, and one that is not running
// claims nothing in Docker).
type GatewayStatus struct {
	// Version is the file format; WriteGateway sets it.
	Version  int   `json:"version"`
	HostHeld []int `json:"hostHeld,omitempty"`
}

// ReadGateway returns the recorded gateway status; (nil, nil) when none
// was written.
func (s *Store) ReadGateway() (*GatewayStatus, error) {
	var g GatewayStatus
	if found, err := s.readState(gatewayFile, &g, &g.Version); !found || err != nil {
		return nil, err
	}
	return &g, nil
}

// WriteGateway records the gateway status, atomically.
func (s *Store) WriteGateway(g *GatewayStatus) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if g == nil {
		return errors.New("gateway status: nil")
	}
	next := *g
	next.Version = formatVersion
	return s.transaction(func() error { return s.writeJSON(gatewayFile, next) })
}
