package dockerx

import (
	"errors"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

// Label keys: the ownership contract of DESIGN §3.
const (
	LabelInstance     = "io.dockctl.instance"
	LabelDeployment   = "io.dockctl.deployment"
	LabelTemplateHash = "io.dockctl.template-hash"
)

// Sentinel errors. Every Docker error that means "no such object" or "name
// already in use" is wrapped so that errors.Is(err, ErrNotFound/ErrConflict)
// holds; callers (and the in-memory fakes) never need the SDK's errdefs.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrUnreachable = errors.New("docker daemon unreachable")
)

// Container states, as Docker reports them.
const (
	StateCreated    = "created"
	StateRunning    = "running"
	StatePaused     = "paused"
	StateRestarting = "restarting"
	StateRemoving   = "removing"
	StateExited     = "exited"
	StateDead       = "dead"
)

// Health values ("" when the container has no health check).
const (
	HealthNone      = ""
	HealthStarting  = "starting"
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// Container is what one list call reports about a container, in plain types.
type Container struct {
	ID      string
	Name    string // without the leading "/"
	Image   string
	ImageID string
	Labels  map[string]string
	// Parsed from Labels.
	Instance     string
	Deployment   string
	TemplateHash string

	State   string    // one of the State* constants
	Health  string    // one of the Health* constants, parsed from Status
	Status  string    // Docker's human status, e.g. "Up 3 minutes (healthy)"
	Created time.Time // creation time
	Ports   []Port
}

type Port struct {
	HostIP        string
	HostPort      uint16
	ContainerPort uint16
	Protocol      string
}

// EventAction is the subset of container event actions dockctl reacts to.
type Event struct {
	// Gap is true when events may have been missed (the stream broke and was
	// re-established, or this is the first connection): consumers must do a
	// full resync of every deployment.
	Gap bool
	// Down is true when the subscription has just failed (the stream broke,
	// or an attempt to re-establish it failed): Docker may be unreachable
	// and events are being missed until the next Gap. Err says why. It
	// carries no deployment, so a consumer that re-lists on such an event
	// learns at once that Docker is gone instead of at its next periodic
	// resync. One is sent per failed attempt, at most every 5s while down.
	Down        bool
	Action      string // "create", "start", "die", "destroy", "stop", "kill", "pause", "unpause", "health_status: healthy", "oom"
	ContainerID string
	Name        string
	Deployment  string // from the container's labels; "" if unlabelled
	Time        time.Time
	Err         error // with Gap: why the stream broke, nil for the first connection; with Down: why it failed
}

// CreateRequest is everything needed to create one replica.
type CreateRequest struct {
	Instance     string
	Name         string // container name, unique across instances
	TemplateHash string
	Deployment   *manifests.Deployment // defaulted
	// Logs is the log rotation to give the replica. Client.CreateContainer
	// fills it from its options and the daemon's default log driver; the
	// zero value sets no log options.
	Logs ContainerLogs
}

// Kubelet's defaults for container log rotation (containerLogMaxSize,
// containerLogMaxFiles).
const (
	DefaultContainerLogMaxSize  = 10 << 20
	DefaultContainerLogMaxFiles = 5
)

// ContainerLogs is the log rotation replicas get, as kubelet rotates
// container logs. It applies only when Driver, the daemon's default log
// driver, is json-file or local: options of those drivers mean nothing to
// (and would be refused by) journald, syslog and the others, whose users
// keep the daemon's choice.
type ContainerLogs struct {
	Driver   string // the daemon's default log driver; "" unknown
	MaxSize  int64  // bytes per file; 0 disables rotation (the daemon's own log-opts apply)
	MaxFiles int
}
