// Package standinapi is the contract between the stand-in images that
// internal/standin builds and the test workload (cmd/workload) that plays
// them: the environment variable, the description's path and its shape. It
// imports nothing, so that the workload stays a small static binary.
package standinapi

// Env names the environment variable of a stand-in image that holds the
// path of its description; set, it puts the workload in stand-in mode.
const Env = "DOCKCTL_STANDIN"

// ConfigPath is where a stand-in image keeps its description.
const ConfigPath = "/standin.json"

// Config describes the image a stand-in plays.
type Config struct {
	// Image is the reference the stand-in is tagged with.
	Image string `json:"image"`
	// Ports are the ports to serve: "8080" (TCP) or "53/udp".
	Ports []string `json:"ports,omitempty"`
	// Init holds the command lines (argv as the container's process sees
	// it) of the init containers that run the image: those exit 0.
	Init [][]string `json:"init,omitempty"`
}
