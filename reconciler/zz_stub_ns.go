package reconciler

// Stand-ins for the store API of issue 10 (svc.md, "Store for the new
// kinds", owner: helper "ns"). Replaced when ns lands on int10: this file
// is then deleted and the names below become store's.

import (
	"strings"
	"time"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// ServiceRecord is store.ServiceRecord (stand-in).
type ServiceRecord struct {
	Service          manifests.Service
	Generation       int64
	Deleted          bool
	Created, Updated time.Time
}

// ServiceStatus is store.ServiceStatus (stand-in).
type ServiceStatus struct {
	Version            int
	ObservedGeneration int64
	ClusterIP          string
	NodePorts          []NodePortStatus
	Endpoints          []EndpointStatus
	PushedGeneration   int64
	Conditions         []Condition
	Updated            time.Time
}

// NodePortStatus is store.NodePortStatus (stand-in).
type NodePortStatus struct {
	Port     int32
	Protocol string
	NodePort int32
}

// EndpointStatus is store.EndpointStatus (stand-in).
type EndpointStatus struct {
	Pod, IP string
	Ready   bool
	Ports   []EndpointPort
}

// EndpointPort is store.EndpointPort (stand-in).
type EndpointPort struct {
	Name     string
	Port     int32
	Protocol string
}

// Condition is store.Condition (stand-in).
type Condition struct {
	Type, Status, Reason, Message string
	LastTransitionTime            time.Time
}

// NetworkStatus is store.NetworkStatus (stand-in).
type NetworkStatus struct {
	Version                               int
	Name, Subnet, IPRange, Gateway, DNSIP string
}

// deploymentKey is the tracker's key of a deployment record: "ns/name"
// once namespaces land (the record's key), "default/name" until then.
func deploymentKey(rec *store.Record) string {
	return rec.Deployment.Metadata.NamespaceOrDefault() + "/" + rec.Name
}

// serviceWatchKey tells a store.Watch key that names a Service apart
// (stand-in for ns's documented form): "service:ns/name" → "ns/name".
func serviceWatchKey(key string) (string, bool) {
	return strings.CutPrefix(key, "service:")
}

// deploymentKeyOfSyncKey is the tracker's key of a deployment sync key
// (a name until namespaces land, then already "ns/name").
func deploymentKeyOfSyncKey(key string) string { return "default/" + key }
