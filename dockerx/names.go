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
