package dockerx

import (
	"strconv"
	"strings"
)

// ContainerName returns the Docker name of one replica:
// "{instance}_{deployment}-{hash}-{ordinal}".
//
// The instance prefix keeps names unique across controller instances on one
// host. Deployment names are DNS-1123 labels and hashes are alphanumeric, so
// neither contains "_": the first "_" ends the instance, and the last two "-"
// delimit hash and ordinal, so a name identifies one replica of one
// instance (names_test.go proves it by parsing names back).
func ContainerName(instance, deployment, hash string, ordinal int) string {
	return instance + "_" + deployment + "-" + hash + "-" + strconv.Itoa(ordinal)
}

// maxHostname is the length limit of a DNS label.
const maxHostname = 63

// Hostname returns the hostname of one replica: "{deployment}-{hash}-{ordinal}",
// a DNS label (no instance prefix, whose "_" is not allowed in one). When
// it would exceed 63 characters the deployment name is cut, never the
// hash and ordinal, so that replicas keep distinct hostnames.
func Hostname(deployment, hash string, ordinal int) string {
	suffix := "-" + hash + "-" + strconv.Itoa(ordinal)
	if room := maxHostname - len(suffix); len(deployment) > room {
		deployment = deployment[:max(room, 0)]
	}
	// A cut may leave the name part ending in "-"; drop it, so that the
	// label never has "--" before the hash.
	deployment = strings.TrimRight(deployment, "-")
	if deployment == "" {
		return strings.Trim(suffix, "-")
	}
	return deployment + suffix
}

// MemberName returns the Docker name of a container of a pod with a
// holder: the holder's name (ContainerName), a dot, and the container's
// name in the template. Template container names are DNS-1123 labels, so
// the last dot ends the holder's name.
func MemberName(holder, container string) string {
	return holder + "." + container
}

// VolumeName returns the Docker name of an emptyDir volume of a pod with a
// holder. The pod's uid makes a pod re-created under the same name get
// fresh volumes, never the previous pod's data.
func VolumeName(holder, volume, uid string) string {
	return holder + "." + volume + "." + uid
}
