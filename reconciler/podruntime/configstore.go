package podruntime

import "github.com/dockctl/dockctl/manifests"

// ConfigStore is what the controller reads of the objects pods refer to:
// ConfigMaps and Secrets for environment variables, file volumes and pull
// credentials, PersistentVolumeClaims for volumes. The store implements it;
// tests give a fake. A lookup of an object that does not exist or is deleted
// returns an error wrapping store.ErrNotFound.
type ConfigStore interface {
	LookupConfigMap(namespace, name string) (*manifests.ConfigMap, error)
	// LookupSecret returns the Secret with StringData already merged
	// into Data. Its values must never reach a log, an error, an event or
	// a status.
	LookupSecret(namespace, name string) (*manifests.Secret, error)
	// LookupClaim returns a live claim; deleted reports a tombstone
	// (the claim was deleted: its volume goes once no container uses
	// it), and an error wrapping store.ErrNotFound a claim this state
	// directory never knew (its volume is never removed).
	LookupClaim(namespace, name string) (claim *manifests.PersistentVolumeClaim, deleted bool, err error)
}
