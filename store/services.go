package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// ServiceRecord is the stored desired state of one Service, live or
// tombstoned. It follows the rules of a deployment's Record: Generation is
// 1 on creation, +1 on every spec change and on deletion, and keeps
// increasing across delete and re-apply; Deleted marks a tombstone (the
// controller removes what serves it).
type ServiceRecord struct {
	// Service is the object as applied, with Status nil and the
	// server-set metadata (generation, creationTimestamp) filled from this
	// record; its metadata.namespace is "" for default.
	Service    manifests.Service `json:"service"`
	Generation int64             `json:"generation"`
	Deleted    bool              `json:"deleted,omitempty"`
	Created    time.Time         `json:"createdAt"`
	Updated    time.Time         `json:"updatedAt"`
	// Ownership is who manages the Service (ownership.go).
	Ownership
	// Applied is what its applier last applied (merge.go).
	Applied
}

// Key returns the Service's key, "namespace/name" (its watch key is
// ServiceKey).
func (r *ServiceRecord) Key() string {
	return Key(r.Service.Metadata.Namespace, r.Service.Metadata.Name)
}

type serviceFile struct {
	Version int `json:"version"`
	ServiceRecord
}

// ServiceStatus is what only the controller knows about a Service. The
// store never changes it on its own: a Service re-applied, deleted or
// applied again keeps its allocated ClusterIP and nodePorts until the
// controller writes another status.
type ServiceStatus struct {
	// Version is the file format; WriteServiceStatus sets it.
	Version            int   `json:"version"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ClusterIP is the allocated (or given) address, ClusterIPNone for a
	// headless Service; kept across controller restarts.
	ClusterIP string `json:"clusterIP,omitempty"`
	// NodePorts are the allocated nodePorts, kept.
	NodePorts []NodePortStatus `json:"nodePorts,omitempty"`
	// Endpoints are the last computed endpoints, for `get endpoints`.
	Endpoints []EndpointStatus `json:"endpoints,omitempty"`
	// Published are the host ports the instance's publisher is to serve
	// for the Service (docs/design.md §10, published ports), on the
	// controller's service address: those its last sync allocated, none
	// held by another (PortConflict). `get services` shows a
	// LoadBalancer's EXTERNAL-IP from them while the publisher runs.
	Published []PublishedPort `json:"published,omitempty"`
	// HostHeld are the host ports the Service claimed that a process of
	// the host holds (a PortConflict, tried again later): still its
	// claim, held for it against the gateway (docs/design.md §10, the
	// first publisher keeps a port), and recalled by a controller that
	// restarted.
	HostHeld []PublishedPort `json:"hostHeld,omitempty"`
	// PushedGeneration is the data-plane generation the proxy acknowledged.
	PushedGeneration int64       `json:"pushedGeneration,omitempty"`
	Conditions       []Condition `json:"conditions,omitempty"`
	// Updated is when the content last changed; WriteServiceStatus sets it
	// when left zero.
	Updated time.Time `json:"updated"`
}

// PublishedPort is one host port a Service is published on.
type PublishedPort struct {
	HostIP   string `json:"hostIP,omitempty"` // "" every address
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

// NodePortStatus is one allocated nodePort.
type NodePortStatus struct {
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
	NodePort int32  `json:"nodePort"`
	// Since is when the Service began to publish it (zero while another
	// claim holds it): a hostPort declared after it does not take it.
	Since time.Time `json:"since,omitzero"`
}

// EndpointStatus is one pod behind a Service.
type EndpointStatus struct {
	Pod   string `json:"pod"`
	IP    string `json:"ip"`
	Ready bool   `json:"ready"`
	// Hostname is the pod's spec.hostname when its spec.subdomain names
	// this Service (an Endpoints address's hostname, as Kubernetes'
	// endpoints controllers set it): a headless Service gives the pod
	// the DNS name HOSTNAME.SERVICE.NS.svc.cluster.local.
	Hostname string         `json:"hostname,omitempty"`
	Ports    []EndpointPort `json:"ports,omitempty"`
}

// EndpointPort is one port of an endpoint.
type EndpointPort struct {
	Name     string `json:"name,omitempty"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

// Condition is a condition of a Service, as Kubernetes words them (e.g.
// Type "PortConflict" or "ProxyFailure", Status "True").
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// serviceKind is the Service's registration (kinds.go). Its file
// predates ObjectRecord: the object is under "service" (serviceFile), and
// metadata.generation carries the record's, as Kubernetes sets it on a
// Service.
var serviceKind = &objectKind[manifests.Service]{
	kind: KindService, dir: servicesDir, prefix: servicePrefix, rank: 1,
	bundle:     func(b *Bundle) *[]*manifests.Service { return &b.Services },
	meta:       func(s *manifests.Service) *manifests.ObjectMeta { return &s.Metadata },
	clean:      func(s *manifests.Service) { s.Status = nil },
	validate:   manifests.ValidateService,
	update:     ignoreStarted(manifests.ValidateServiceUpdate),
	spec:       func(s *manifests.Service) any { return &s.Spec },
	generation: true,
	file: &fileFormat[manifests.Service]{
		encode: func(r *ObjectRecord[manifests.Service]) any {
			return serviceFile{Version: formatVersion, ServiceRecord: *serviceRecord(r)}
		},
		decode: func() (any, *int, func() *ObjectRecord[manifests.Service]) {
			f := &serviceFile{}
			return f, &f.Version, func() *ObjectRecord[manifests.Service] {
				r := f.ServiceRecord
				return &ObjectRecord[manifests.Service]{Object: r.Service, Generation: r.Generation, Deleted: r.Deleted,
					Created: r.Created, Updated: r.Updated, Ownership: r.Ownership, Applied: r.Applied}
			}
		},
	},
}

// serviceRecord is r as the API returns a Service's record.
func serviceRecord(r *ObjectRecord[manifests.Service]) *ServiceRecord {
	return &ServiceRecord{Service: r.Object, Generation: r.Generation, Deleted: r.Deleted,
		Created: r.Created, Updated: r.Updated, Ownership: r.Ownership, Applied: r.Applied}
}

// ListServices returns every service record of every namespace, live and
// tombstoned, sorted by namespace and name; a file that cannot be read
// yields one error naming it and does not hide the others.
func (s *Store) ListServices() ([]*ServiceRecord, []error) {
	recs, errs := listObjects(s, serviceKind)
	out := make([]*ServiceRecord, len(recs))
	for i, r := range recs {
		out[i] = serviceRecord(r)
	}
	return out, errs
}

// LookupService returns the record of Service name in namespace ns,
// tombstones included (ServiceRecord.Deleted), or an error wrapping
// ErrNotFound for a Service never applied. Any other error means the
// answer is unknown.
func (s *Store) LookupService(ns, name string) (*ServiceRecord, error) {
	if err := checkObject(KindService, ns, name); err != nil {
		return nil, err
	}
	r, err := readObject(s, serviceKind, ns, name)
	if err != nil {
		return nil, err
	}
	return serviceRecord(r), nil
}

// DeleteService tombstones the live Service name of namespace ns; an
// error wraps ErrNotFound if there is none.
func (s *Store) DeleteService(ns, name string) error {
	return s.deleteOne(ObjectRef{Kind: KindService, Namespace: ns, Name: name})
}

// readState reads and decodes the state file rel into v, whose format
// version lands in *version; found is false when there is no such file.
// Errors name the file.
func (s *Store) readState(rel string, v any, version *int) (found bool, err error) {
	data, err := s.readFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		err = decodeVersioned(data, v, version)
	}
	if err != nil {
		return true, fmt.Errorf("state file %s: %w", rel, err)
	}
	return true, nil
}

// decodeVersioned decodes a state file whose format version lands in
// *version, refusing a file without one or of a newer format. A file that
// does not decode is of a newer format when its version says so: such an
// error does not wrap ErrCorrupt, so that no writer replaces it.
func decodeVersioned(data []byte, v any, version *int) error {
	return decodeUpTo(data, v, version, formatVersion)
}

// decodeUpTo is decodeVersioned for a file whose newest format is max.
func decodeUpTo(data []byte, v any, version *int, max int) error {
	if err := json.Unmarshal(data, v); err != nil {
		if n := leadingVersion(data); n > max {
			return fmt.Errorf("written in format %d by a newer dockctl (this one reads up to %d)", n, max)
		}
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	switch {
	case *version == 0:
		return fmt.Errorf("%w: no format version", ErrCorrupt)
	case *version > max:
		return fmt.Errorf("written in format %d by a newer dockctl (this one reads up to %d)", *version, max)
	}
	return nil
}

// leadingVersion is the top-level "version" of a JSON object read token by
// token, so that it is found in a file cut short or otherwise malformed
// after it (dockctl writes it first); 0 when there is none.
func leadingVersion(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0
		}
		if key == "version" {
			var n int
			if dec.Decode(&n) != nil {
				return 0
			}
			return n
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0
		}
	}
	return 0
}

// roundTrip deep-copies in into out through JSON.
func roundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("copying: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("copying: %w", err)
	}
	return nil
}

// ReadServiceStatus returns the controller status of Service name in
// namespace ns; (nil, nil) when none was written.
func (s *Store) ReadServiceStatus(ns, name string) (*ServiceStatus, error) {
	if err := checkObject(KindService, ns, name); err != nil {
		return nil, err
	}
	var st ServiceStatus
	if found, err := s.readState(serviceStatusPath(ns, name), &st, &st.Version); !found || err != nil {
		return nil, err
	}
	return &st, nil
}

// WriteServiceStatus stores st as the status of Service name in namespace
// ns, atomically; as WriteStatus, it writes nothing when only Updated
// would change.
func (s *Store) WriteServiceStatus(ns, name string, st *ServiceStatus) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := checkObject(KindService, ns, name); err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("status of service %q: nil", display(ns, name))
	}
	return s.transaction(func() error {
		next := *st
		next.Version = formatVersion
		old, err := s.ReadServiceStatus(ns, name)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err // a corrupt status is simply replaced
		}
		if old != nil && sameExceptTime(old, &next, func(x *ServiceStatus) { x.Updated = time.Time{} }) {
			return nil
		}
		if next.Updated.IsZero() {
			next.Updated = storeNow()
		}
		if err := s.ensureNamespaceDirs(ns); err != nil {
			return err
		}
		return s.writeJSON(serviceStatusPath(ns, name), next)
	})
}

// sameExceptTime compares two values by their JSON encoding once clear
// (which zeroes the time stamps that do not count) has run on copies.
func sameExceptTime[T any](a, b *T, clear func(*T)) bool {
	x, y := *a, *b
	clear(&x)
	clear(&y)
	bx, err1 := json.Marshal(x)
	by, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && bytes.Equal(bx, by)
}

// writeJSON writes v, indented, to rel atomically (the caller holds the
// write lock).
func (s *Store) writeJSON(rel string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", rel, err)
	}
	if err := writeFileAtomic(s.dirOf(rel), baseOf(rel), append(data, '\n')); err != nil {
		return fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	return nil
}
