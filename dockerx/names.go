package dockerx

import "strconv"

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
