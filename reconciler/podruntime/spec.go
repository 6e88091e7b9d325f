package podruntime

// OwnerRef names the object a pod belongs to, as a pod's
// metadata.ownerReferences entry does: data, never a kind the runtime
// knows anything about.
type OwnerRef struct {
	Kind string // e.g. "ReplicaSet", "StatefulSet", "Job"
	Name string
	UID  string
}
