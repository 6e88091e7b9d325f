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
// delimit hash and ordinal. That is what makes ParseContainerName unambiguous.
func ContainerName(instance, deployment, hash string, ordinal int) string {
	return instance + "_" + deployment + "-" + hash + "-" + strconv.Itoa(ordinal)
}

// ParseContainerName is the inverse of ContainerName. ok is false for a name
// ContainerName cannot have produced (a leading "/" as Docker reports names
// is accepted).
func ParseContainerName(name string) (instance, deployment, hash string, ordinal int, ok bool) {
	name = strings.TrimPrefix(name, "/")
	instance, rest, found := strings.Cut(name, "_")
	if !found || instance == "" {
		return "", "", "", 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", "", "", 0, false
	}
	ordStr := rest[i+1:]
	rest = rest[:i]
	ordinal, err := strconv.Atoi(ordStr)
	// Reject "+1", "-1" and "01": only the canonical form round-trips.
	if err != nil || ordinal < 0 || strconv.Itoa(ordinal) != ordStr {
		return "", "", "", 0, false
	}
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 || j == len(rest)-1 {
		return "", "", "", 0, false
	}
	deployment, hash = rest[:j], rest[j+1:]
	if strings.Contains(deployment, "_") || strings.Contains(hash, "_") {
		return "", "", "", 0, false
	}
	return instance, deployment, hash, ordinal, true
}
